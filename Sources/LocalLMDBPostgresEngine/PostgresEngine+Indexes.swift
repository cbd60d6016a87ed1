import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine
import PostgresNIO

// Secondary indexes on the server: the same definitions and tuples as LMDB's (`StoredIndex`,
// `IndexDefinition`), kept in `<prefix>_indexes` and `<prefix>_entries` (see `StoreSchema`) by
// every write, in its transaction, from the stored bytes. Invariant, as on LMDB: each record of a
// class with stored indexes has exactly the entries `IndexDefinition.entries` gives for its
// stored bytes in each of them, and every entry names such a record. All of it runs on the
// engine's thread, inside a write transaction (which holds the store's writers' lock).
extension PostgresEngine {
    /// Reads the catalog, at `version`.
    func loadCatalog(version: Int64, on connection: PostgresConnection, _ operation: String) throws(DatabaseError) {
        let result = try run(PostgresQuery(unsafeSQL: "SELECT catalog_key, catalog_value FROM \(schema.indexes)"), on: connection, operation)
        var byClass: [String: [StoredIndex]] = [:]
        for row in result.rows {
            guard let (key, value) = try? row.decode((ByteBuffer, ByteBuffer).self) else { continue }
            let parsed = key.withUnsafeReadableBytes { key in value.withUnsafeReadableBytes { value in StoredIndex(key: key, value: value) } }
            if let index = parsed { byClass[index.className, default: []].append(index) }
        }
        catalog = (version, byClass)
    }

    /// The stored indexes by class name, as the current write transaction sees them.
    /// - Throws: `transactionFailed` when the transaction could not read them again after a
    ///   refused write (its writes would not keep the indexes).
    var storedIndexes: [String: [StoredIndex]] {
        get throws(DatabaseError) {
            guard let catalog else {
                throw .transactionFailed(reason: "the store's index catalog could not be read again after a refused write")
            }
            return catalog.byClass
        }
    }

    /// Gives the catalog a new version, after changing it in the current transaction.
    private func catalogChanged(_ byClass: [String: [StoredIndex]], on connection: PostgresConnection) throws(DatabaseError) {
        let version = Int64.random(in: Int64.min...Int64.max)
        _ = try run(
            PostgresQuery(unsafeSQL: "UPDATE locallmdb_stores SET index_version = $1 WHERE name = $2", binds: binds(version, schema.nameBytes)),
            on: connection, "recording indexes")
        catalog = (version, byClass)
    }

    // MARK: Defining and dropping

    /// Stores each definition of `className` not stored yet and builds it from the records of
    /// `className`. Returns the number of indexes made.
    /// - Throws: `uniqueIndexViolation` when two records have one value in a unique index.
    func define(
        _ definitions: [IndexDefinition], className: String, progress: IndexBuildListener?, on connection: PostgresConnection
    ) throws(DatabaseError) -> Int {
        var byClass = try storedIndexes
        var made = 0
        for definition in definitions where !(byClass[className] ?? []).contains(where: { $0.definition.name == definition.name }) {
            let numbers = byClass.values.joined().map(\.number)
            let number = (numbers.max() ?? 0) + 1
            let index = StoredIndex(number: number, className: className, definition: definition)
            _ = try run(
                PostgresQuery(
                    unsafeSQL: "INSERT INTO \(schema.indexes) (catalog_key, catalog_value) VALUES ($1, $2)",
                    binds: binds(
                        ByteBuffer(bytes: StoredIndex.catalogKey(className: className, name: definition.name)),
                        ByteBuffer(bytes: index.catalogValue))),
                on: connection, "declaring indexes")
            try build(index, progress: progress, on: connection)
            byClass[className, default: []].append(index)
            made += 1
        }
        if made > 0 { try catalogChanged(byClass, on: connection) }
        return made
    }

    /// Adds the entries of every record of `index.className`.
    private func build(_ index: StoredIndex, progress: IndexBuildListener?, on connection: PostgresConnection) throws(DatabaseError) {
        let rows = try run(
            PostgresQuery(
                unsafeSQL: "SELECT key, value FROM \(schema.records) WHERE class_key = $1",
                binds: binds(ByteBuffer(bytes: StorageKey(index.className, maxKeySize: maxKeySize).bytes))),
            on: connection, "building an index"
        ).rows
        let name = index.definition.name
        progress?(index.className, name, 0, rows.count)
        var entries = IndexEntries()
        for (done, row) in rows.enumerated() {
            guard let (key, value) = try? row.decode((ByteBuffer, ByteBuffer).self) else { continue }
            entries.add(index, key: Array(buffer: key), value: value)
            if (done + 1) % 4096 == 0 { progress?(index.className, name, done + 1, rows.count) }
        }
        try insert(entries, on: connection)
        progress?(index.className, name, rows.count, rows.count)
    }

    /// Removes the index of `className` named `name` and its entries; false when there is none.
    func dropIndex(className: String, name: String, on connection: PostgresConnection) throws(DatabaseError) -> Bool {
        var byClass = try storedIndexes
        guard let index = byClass[className]?.first(where: { $0.definition.name == name }) else { return false }
        _ = try run(
            PostgresQuery(unsafeSQL: "DELETE FROM \(schema.entries) WHERE number = $1", binds: binds(Int32(bitPattern: index.number))),
            on: connection, "dropping an index")
        _ = try run(
            PostgresQuery(
                unsafeSQL: "DELETE FROM \(schema.indexes) WHERE catalog_key = $1",
                binds: binds(ByteBuffer(bytes: StoredIndex.catalogKey(className: className, name: name)))),
            on: connection, "dropping an index")
        byClass[className]?.removeAll { $0.number == index.number }
        try catalogChanged(byClass, on: connection)
        return true
    }

    // MARK: Upkeep

    /// After records were put: replaces the entries of `keys` (the batch's keys, each once, with
    /// the class name and value each holds now).
    func replaceEntries(of records: [(key: [UInt8], className: String, value: ByteBuffer)], on connection: PostgresConnection) throws(DatabaseError) {
        let byClass = try storedIndexes
        guard !byClass.isEmpty else { return }
        _ = try run(
            PostgresQuery(
                unsafeSQL: "DELETE FROM \(schema.entries) WHERE key = ANY($1::bytea[])", binds: binds(records.map { ByteBuffer(bytes: $0.key) })),
            on: connection, "writing")
        var entries = IndexEntries()
        for record in records {
            for index in byClass[record.className] ?? [] { entries.add(index, key: record.key, value: record.value) }
        }
        try insert(entries, on: connection)
    }

    /// Deletes the entries of the records under `keys`.
    func deleteEntries(keys: [ByteBuffer], on connection: PostgresConnection) throws(DatabaseError) {
        guard !(try storedIndexes).isEmpty else { return }
        _ = try run(
            PostgresQuery(unsafeSQL: "DELETE FROM \(schema.entries) WHERE key = ANY($1::bytea[])", binds: binds(keys)),
            on: connection, "deleting")
    }

    /// Deletes every entry of the indexes of `classNames`.
    func deleteEntries(classNames: [String], on connection: PostgresConnection) throws(DatabaseError) {
        let byClass = try storedIndexes
        let numbers = classNames.flatMap { byClass[$0] ?? [] }.map { Int32(bitPattern: $0.number) }
        guard !numbers.isEmpty else { return }
        _ = try run(
            PostgresQuery(unsafeSQL: "DELETE FROM \(schema.entries) WHERE number = ANY($1::int4[])", binds: binds(numbers)),
            on: connection, "deleting")
    }

    /// Deletes every entry.
    func deleteAllEntries(on connection: PostgresConnection) throws(DatabaseError) {
        guard !(try storedIndexes).isEmpty else { return }
        _ = try run(PostgresQuery(unsafeSQL: "DELETE FROM \(schema.entries)"), on: connection, "clearing")
    }

    /// Inserts `entries`, after refusing a second record under a tuple of a unique index (among
    /// them, or against the entries stored: those of the records being written are gone by then).
    private func insert(_ entries: IndexEntries, on connection: PostgresConnection) throws(DatabaseError) {
        guard !entries.numbers.isEmpty else { return }
        if let (index, first, second) = entries.duplicate {
            throw .uniqueIndexViolation(className: index.className, index: index.definition.name, ids: [first, second])
        }
        if !entries.unique.isEmpty {
            let clash = try run(
                PostgresQuery(
                    unsafeSQL: """
                        SELECT e.number, e.key, r.value, u.key FROM unnest($1::int4[], $2::bytea[], $3::bytea[]) AS u(number, tuple, key)
                        JOIN \(schema.entries) e ON e.number = u.number AND e.head = substring(u.tuple from 1 for 1024) AND e.tuple = u.tuple
                        LEFT JOIN \(schema.records) r ON r.key = e.key
                        WHERE e.key <> u.key LIMIT 1
                        """,
                    binds: binds(
                        entries.unique.map { Int32(bitPattern: $0.index.number) }, entries.unique.map { ByteBuffer(bytes: $0.tuple) },
                        entries.unique.map { ByteBuffer(bytes: $0.key) })),
                on: connection, "writing")
            if let row = clash.rows.first, let (number, storedKey, storedValue, key) = try? row.decode((Int32, ByteBuffer, ByteBuffer?, ByteBuffer).self) {
                let written = entries.unique.first { $0.index.number == UInt32(bitPattern: number) && $0.key == Array(buffer: key) }
                throw .uniqueIndexViolation(
                    className: written?.index.className ?? "", index: written?.index.definition.name ?? "",
                    ids: [Self.recordID(key: Array(buffer: storedKey), value: storedValue), Self.recordID(key: Array(buffer: key), value: written?.value)])
            }
        }
        var start = 0
        while start < entries.numbers.count {
            let end = min(start + 10_000, entries.numbers.count)
            _ = try run(
                PostgresQuery(
                    unsafeSQL: "INSERT INTO \(schema.entries) (number, tuple, key) SELECT * FROM unnest($1::int4[], $2::bytea[], $3::bytea[])",
                    binds: binds(Array(entries.numbers[start..<end]), Array(entries.tuples[start..<end]), Array(entries.keys[start..<end]))),
                on: connection, "writing")
            start = end
        }
    }

    /// The id of the record under `key`, from its stored value when known (which holds a hashed
    /// key's id).
    static func recordID(key: [UInt8], value: ByteBuffer?) -> String {
        key.withBytes { key in
            guard let value else { return RecordDecoding.displayID(key) }
            return value.withUnsafeReadableBytes { value in RecordDecoding.id(key: key, value: value) }
        }
    }
}

/// Entries to insert, as the statement's columns, and what a unique index holds them to.
struct IndexEntries {
    var numbers: [Int32] = []
    var tuples: [ByteBuffer] = []
    var keys: [ByteBuffer] = []
    /// The entries of unique indexes (a field missing exempts one), to check against those stored.
    var unique: [(index: StoredIndex, tuple: [UInt8], key: [UInt8], value: ByteBuffer)] = []
    /// Two records with one tuple of a unique index, among these: the index and both ids.
    var duplicate: (StoredIndex, String, String)?
    private var owners: [UInt32: [[UInt8]: (key: [UInt8], value: ByteBuffer)]] = [:]

    /// Adds the entries the record under `key` with the stored value `value` has in `index` (none
    /// for a value that cannot be read as LocalLMDB wrote it, as on LMDB).
    mutating func add(_ index: StoredIndex, key: [UInt8], value: ByteBuffer) {
        let entries = value.withUnsafeReadableBytes { bytes in index.definition.entries(ofStoredValue: bytes, key: key) } ?? []
        for (tuple, hasMissing) in entries {
            numbers.append(Int32(bitPattern: index.number))
            tuples.append(ByteBuffer(bytes: tuple))
            keys.append(ByteBuffer(bytes: key))
            guard index.definition.isUnique, !hasMissing else { continue }
            unique.append((index, tuple, key, value))
            if let owner = owners[index.number]?[tuple], owner.key != key, duplicate == nil {
                duplicate = (index, PostgresEngine.recordID(key: owner.key, value: owner.value), PostgresEngine.recordID(key: key, value: value))
            }
            owners[index.number, default: [:]][tuple] = (key, value)
        }
    }
}

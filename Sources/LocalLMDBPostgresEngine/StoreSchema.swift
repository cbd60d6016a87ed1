import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import PostgresNIO

/// The tables of one named store on a PostgreSQL server, and their creation and migration.
///
/// Every store is listed in `locallmdb_stores` (its name as bytes, so any Swift string is a
/// name, NUL included), with its schema version, its change log's id and the sequence number
/// of its last commit. Its tables are named from a digest of its name (`locallmdb_` and 16
/// hexadecimal digits), so no name a caller gives ever becomes part of a statement: names,
/// ids and values travel as parameters only.
///
/// - `<prefix>_records (key bytea primary key, class_key bytea, class_name bytea, value bytea)`:
///   LMDB's `records` and `types` together. `key` is the record's `StorageKey`, `value` the
///   complete `RecordValue` LocalLMDB stores (header, checksum, JSON), so a record is the same
///   bytes on either engine.
/// - `<prefix>_classes (name_key bytea primary key, row bytea, spelling_key bytea)`: the class
///   table (`StoredClass`), with the key of each name's canonical form (`StoredClass.spellingKey`).
/// - `<prefix>_log (tick bigint primary key, sequence bigint unique, changes bytea)`: the change
///   log, one row per commit, written in the commit (`ChangeLog.encode`). `tick` is taken from the
///   store's sequence `<prefix>_ticks` by the commit's last statement; `sequence`, the commit's
///   number in the log, is given later by the log's sequencer (`LogSequencer`), null until then.
/// - `<prefix>_sequencer (last bigint)`: one row, the log's last number, written by the sequencer
///   only (no writer ever locks it, so reading the log never waits for a writer).
/// - `<prefix>_replication (source text primary key, position text)`: where each replicator
///   writing into this store has got to, written in the transaction that applies its commits.
/// - `<prefix>_indexes (catalog_key bytea primary key, catalog_value bytea)`: the secondary
///   indexes, as LMDB's `indexes` database holds them (`StoredIndex`); `index_version` in
///   `locallmdb_stores` changes with every change of it (a random number), so a writer that
///   took the store's row knows at once whether the catalog it holds is current.
/// - `<prefix>_entries (number int4, tuple bytea, key bytea, head bytea)`: each record's entries in
///   each index of its class: the index's number, the whole `IndexKey` tuple and the record's key
///   (LMDB's `entries`, with no tuple ever shortened); `head`, the tuple's first 1,024 bytes
///   (generated), is what the B-tree orders, as a whole tuple may be longer than a B-tree entry.
/// - `<prefix>_put2(…)`: a procedure that writes records by key in one round trip, with the
///   checks a write transaction makes (`StoreSchema.putProcedure`); not part of the schema's
///   version (a store without it is written the general way).
///
/// Invariants:
/// - A store's sequence numbers are consecutive, and `<prefix>_sequencer.last` is the last one
///   given: only the sequencer gives them, one at a time per store (its advisory lock), in one
///   transaction with that row's increment. (`locallmdb_stores.sequence`, which versions before
///   6 kept, stays as it was when the store became version 6.)
/// - Two commits that wrote the same row are numbered in the order they committed. A commit
///   takes its tick as its last statement, after every row it writes is locked; a commit that
///   waited for another's row lock takes its tick after that commit ended, so from a larger tick
///   (`<prefix>_ticks` has a cache of 1: values in the order they are taken, across sessions).
///   The sequencer numbers every committed entry it sees in tick order, and it sees the earlier
///   commit whenever it sees the later one. (Commits that wrote no common row may be numbered in
///   either order: their changes commute.)
/// - Write transactions take the store's writers' lock first (`PostgresEngine.begin`): shared by
///   writes of records by key and devices' pushes, which run side by side (their rows' locks
///   order the ones that meet: `WritersLock`); exclusive for every other write, which runs alone. No write transaction locks the
///   store's row for its commit: commits of many processes are flushed together.
struct StoreSchema: Sendable {
    /// The schema version this library writes. Version 1 lacked the index of records by class,
    /// version 2 the secondary indexes' tables; opening such a store adds them. (A store of
    /// version 3 is refused by versions that would write it without keeping its indexes.)
    /// Version 4 changes no table: its writers lock the store differently (`WritersLock`), so
    /// versions that lock its row for a whole transaction, which would not exclude them, refuse
    /// it from their next transaction on (opening a store of version 3 raises it once the
    /// transactions in flight have ended: the raise waits for their lock on the row).
    /// Version 6 numbers the log after the commits (`LogSequencer`): its log has ticks, and
    /// versions that number it in the commit refuse it.
    static let version = 6
    /// The schema version of a store that has had a migration (`MigrationState`, in the
    /// `migrations` column): versions of this library that know nothing of migrations, and
    /// would write records of the old shapes into it, refuse it. Set by a migration's first
    /// commit, never by opening. (Version 5 was a migrated store of version 4: opening one
    /// makes it this version.)
    static let migratedVersion = 7
    /// The version a store of version `found` has once opened by this library.
    static func opened(from found: Int) -> Int {
        found == 5 ? migratedVersion : version
    }

    /// The store's name.
    let name: String
    /// The tables' common prefix: `locallmdb_` and 16 hexadecimal digits.
    let prefix: String
    /// The change log's id (a UUID made with the store), for change tokens.
    let logID: String
    /// Whether the store had its put procedure (`putProcedure`) once opened; nil when not asked.
    var hadPutProcedure: Bool?
    /// Whether the store had its log's numbering function (`numberFunction`) once opened; nil
    /// when not asked.
    var hadNumberFunction: Bool?

    var records: String { prefix + "_records" }
    var classes: String { prefix + "_classes" }
    var log: String { prefix + "_log" }
    var replication: String { prefix + "_replication" }
    var indexes: String { prefix + "_indexes" }
    var entries: String { prefix + "_entries" }
    /// The log's ticks (a sequence, cache 1).
    var ticks: String { prefix + "_ticks" }
    /// The log's last number, one row that only the sequencer writes (`LogSequencer`).
    var sequencer: String { prefix + "_sequencer" }

    /// The statement that reads the store's last sequence number, and whether the log holds
    /// entries the sequencer has not numbered yet (committed, as this statement's snapshot sees).
    var sequenceQuery: PostgresQuery {
        PostgresQuery(unsafeSQL: "SELECT last, EXISTS (SELECT 1 FROM \(log) WHERE sequence IS NULL) FROM \(sequencer)")
    }

    /// The statement a write transaction reads the store's row with, once it holds the writers'
    /// lock (see `PostgresEngine.begin`): its index catalog's version, its schema version and its
    /// migration entry (`StoreSchema.Locked`), which change only under the exclusive lock.
    var lockQuery: PostgresQuery {
        PostgresQuery(unsafeSQL: "SELECT index_version, version, migrations FROM locallmdb_stores WHERE name = $1", binds: binds(nameBytes))
    }

    /// The statement that takes the store's writers' lock until the transaction ends: an advisory
    /// lock in the two-integer key space (apart from the class and migration locks' bigint keys).
    /// With `synchronizing`, the same statement marks the transaction as a device's push
    /// (`locallmdb.synchronizing`, which the records' trigger reads), saving a round trip.
    func writersLock(_ mode: WritersLock, synchronizing: Bool = false) -> PostgresQuery {
        let function = mode == .shared ? "pg_advisory_xact_lock_shared" : "pg_advisory_xact_lock"
        let marking = synchronizing ? ", set_config('locallmdb.synchronizing', 'on', true)" : ""
        return PostgresQuery(
            unsafeSQL: "SELECT \(function)(\(lockKey))\(marking)")
    }

    /// The lock a push takes before numbering conflict log entries, held until it commits, so
    /// that entries are numbered in commit order (`PostgresEngine.pushSync`).
    var conflictLogLock: PostgresQuery {
        PostgresQuery(unsafeSQL: "SELECT pg_advisory_xact_lock(\(0x4C4D_4443 as Int32), \(Int32(truncatingIfNeeded: migrationLockKey)))")
    }

    /// What `lockQuery` reads.
    struct Locked {
        /// The index catalog's version.
        let indexVersion: Int64
        /// The schema version.
        let schemaVersion: Int32
        /// The store's migration entry (`MigrationState`'s bytes); nil when it has had none.
        let migrations: [UInt8]?

        /// The row `result` holds; nil when the store is no longer listed (or the row does not decode).
        init?(_ result: PostgresQueryResult) {
            guard let row = result.rows.first, let (indexVersion, schemaVersion, migrations) = try? row.decode((Int64, Int32, ByteBuffer?).self)
            else { return nil }
            self.indexVersion = indexVersion
            self.schemaVersion = schemaVersion
            self.migrations = migrations.map { Array(buffer: $0) }
        }
    }

    /// The statement that reads the store's migration entry.
    var migrationsQuery: PostgresQuery {
        PostgresQuery(unsafeSQL: "SELECT migrations FROM locallmdb_stores WHERE name = $1", binds: binds(nameBytes))
    }

    /// The statement that records the migration state `state` (in a write transaction that
    /// holds the store's row), raising the schema version to `migratedVersion`.
    func recordMigrations(_ state: [UInt8]) -> PostgresQuery {
        PostgresQuery(
            unsafeSQL: "UPDATE locallmdb_stores SET migrations = $2, version = GREATEST(version, \(Self.migratedVersion)) WHERE name = $1",
            binds: binds(nameBytes, ByteBuffer(bytes: state)))
    }

    /// The key of the server's advisory lock one migrator of the store holds at a time: the
    /// prefix's digest (another store's key equal to it would only make their migrators take turns).
    var migrationLockKey: Int64 {
        Int64(bitPattern: UInt64(prefix.dropFirst("locallmdb_".count), radix: 16) ?? 0)
    }

    /// The store's name as the bytes it is listed under.
    var nameBytes: ByteBuffer { ByteBuffer(bytes: Array(name.utf8)) }

    /// The prefix for the store `name`.
    static func prefix(for name: String) -> String {
        "locallmdb_" + SHA256.digest(Array(name.utf8)).prefix(8).map { byte in
            let digits = Array("0123456789abcdef")
            return String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
        }.joined()
    }

    /// How every transaction that writes begins (the store's creation, the engine's writes, the
    /// log's trimming): at read committed and read-write, whatever the server's, role's or
    /// database's defaults (`default_transaction_isolation`, `default_transaction_read_only`).
    /// Under repeatable read or serializable, a writer that waited for the store's row lock
    /// would fail (SQLSTATE 40001) once the writer before it committed, and an opener that
    /// waited for the creation lock would not see the tables the one before it made.
    static let beginWrite: PostgresQuery = "BEGIN ISOLATION LEVEL READ COMMITTED READ WRITE"

    /// Creates the store's tables, or migrates them from an older version, and returns its
    /// schema. Safe while other processes do the same: the work is done in one transaction
    /// holding a transaction-level advisory lock.
    /// - Throws: `unsupportedFormat` when the store was made by a newer version of this library.
    static func open(
        _ name: String, on connection: PostgresConnection, logger: Logger, within limit: Duration, busyTimeout: Duration, maxKeySize: Int
    ) async throws(DatabaseError) -> StoreSchema {
        func run(_ query: PostgresQuery) async throws -> PostgresQueryResult {
            try await connection.send(query, logger: logger, within: limit).get()
        }
        let prefix = Self.prefix(for: name)
        let nameBytes = ByteBuffer(bytes: Array(name.utf8))
        return try await ServerCall.run("opening the store", busyTimeout: busyTimeout) { () async throws -> StoreSchema in
            _ = try await run(beginWrite)
            do {
                // One lock for every store's creation: creations are rare and short.
                _ = try await run("SELECT pg_advisory_xact_lock(7236051267330040897)")
                // Made only when missing: a role a store was granted to (`StoreAccess`) may not
                // create tables, and `CREATE TABLE IF NOT EXISTS` checks that before it looks.
                let hasStores = try await run("SELECT to_regclass('locallmdb_stores') IS NOT NULL").rows.first
                    .flatMap { try? $0.decode(Bool.self) } ?? false
                if !hasStores {
                    _ = try await run("""
                    CREATE TABLE IF NOT EXISTS locallmdb_stores (
                        name bytea PRIMARY KEY, prefix text NOT NULL UNIQUE, version integer NOT NULL,
                        log_id text NOT NULL, sequence bigint NOT NULL DEFAULT 0)
                    """)
                }
                // Added only when missing: `ALTER TABLE` locks the table exclusively before it
                // looks, so an open would wait for every write transaction on every store (they
                // lock their row), and make new ones wait behind it.
                let hasIndexVersion = try await run("""
                    SELECT 1 FROM pg_attribute
                    WHERE attrelid = 'locallmdb_stores'::regclass AND attname = 'index_version' AND NOT attisdropped
                    """).rows.contains { _ in true }
                if !hasIndexVersion {
                    _ = try await run("ALTER TABLE locallmdb_stores ADD COLUMN IF NOT EXISTS index_version bigint NOT NULL DEFAULT 0")
                }
                // The migration entry (`MigrationState`), likewise; null for a store never migrated.
                let hasMigrations = try await run("""
                    SELECT 1 FROM pg_attribute
                    WHERE attrelid = 'locallmdb_stores'::regclass AND attname = 'migrations' AND NOT attisdropped
                    """).rows.contains { _ in true }
                if !hasMigrations {
                    _ = try await run("ALTER TABLE locallmdb_stores ADD COLUMN IF NOT EXISTS migrations bytea")
                }
                var found: (prefix: String, version: Int, logID: String)?
                for row in try await run("SELECT prefix, version, log_id FROM locallmdb_stores WHERE name = \(nameBytes)").rows {
                    let (storedPrefix, version, logID) = try row.decode((String, Int, String).self)
                    found = (storedPrefix, version, logID)
                }
                let logID: String
                if let found {
                    guard found.prefix == prefix else {
                        throw DatabaseError.invalidDirectory(path: name, reason: "the server lists this store under another table prefix")
                    }
                    guard found.version <= migratedVersion else {
                        throw DatabaseError.unsupportedFormat(found: found.version, supported: migratedVersion)
                    }
                    logID = found.logID
                    if found.version < version || found.version == 5 {
                        // The writers' lock (exclusive) and the row first: every writer in flight,
                        // of any version, finishes its commit before the tables change (an older
                        // writer numbering its entry after a newer one it waited for would put
                        // them out of order), and the ones after read the new version (older
                        // versions refuse it).
                        _ = try await run(StoreSchema(name: name, prefix: prefix, logID: found.logID).writersLock(.exclusive))
                        _ = try await run("SELECT 1 FROM locallmdb_stores WHERE name = \(nameBytes) FOR UPDATE")
                        try await migrate(prefix: prefix, name: nameBytes, from: found.version, run)
                        _ = try await run("UPDATE locallmdb_stores SET version = \(opened(from: found.version)) WHERE name = \(nameBytes)")
                    }
                } else {
                    logID = UUID().uuidString
                    try await create(prefix: prefix, name: nameBytes, run)
                    _ = try await run(
                        "INSERT INTO locallmdb_stores (name, prefix, version, log_id) VALUES (\(nameBytes), \(prefix), \(version), \(logID))")
                }
                try await addSpellingKeys(prefix: prefix, maxKeySize: maxKeySize, run)
                var opened = StoreSchema(name: name, prefix: prefix, logID: logID)
                opened.hadPutProcedure = try await opened.addPutProcedure(run)
                opened.hadNumberFunction = try await opened.addNumberFunction(run)
                _ = try await run("COMMIT")
                return opened
            } catch {
                _ = try? await run("ROLLBACK")
                throw error
            }
        }
    }

    /// Creates the tables of the current version.
    private static func create(prefix: String, name: ByteBuffer, _ run: (PostgresQuery) async throws -> PostgresQueryResult) async throws {
        for statement in [
            "CREATE TABLE \(prefix)_records (key bytea PRIMARY KEY, class_key bytea NOT NULL, class_name bytea NOT NULL, value bytea NOT NULL)",
            "CREATE TABLE \(prefix)_classes (name_key bytea PRIMARY KEY, row bytea NOT NULL)",
            "CREATE TABLE \(prefix)_log (sequence bigint PRIMARY KEY, changes bytea NOT NULL)",  // Version 6 adds its ticks.
            "CREATE TABLE \(prefix)_replication (source text PRIMARY KEY, position text NOT NULL)",
        ] {
            _ = try await run(PostgresQuery(unsafeSQL: statement))
        }
        try await migrate(prefix: prefix, name: name, from: 1, run)
    }

    /// The classes' `spelling_key` (`StoredClass.spellingKey`), by which the spelling rule finds
    /// the stored names of a canonical form: the column and its index, added when missing (not a
    /// schema version: an earlier version of this library, which writes rows without it, keeps
    /// working, and its rows are read by every check until an open fills them in), then filled
    /// in for the rows that lack it.
    private static func addSpellingKeys(
        prefix: String, maxKeySize: Int, _ run: (PostgresQuery) async throws -> PostgresQueryResult
    ) async throws {
        let hasColumn = try await run(PostgresQuery(unsafeSQL: """
            SELECT 1 FROM pg_attribute
            WHERE attrelid = '\(prefix)_classes'::regclass AND attname = 'spelling_key' AND NOT attisdropped
            """)).rows.contains { _ in true }
        if !hasColumn {
            _ = try await run(PostgresQuery(unsafeSQL: "ALTER TABLE \(prefix)_classes ADD COLUMN IF NOT EXISTS spelling_key bytea"))
            _ = try await run(PostgresQuery(unsafeSQL: "CREATE INDEX IF NOT EXISTS \(prefix)_classes_spelling ON \(prefix)_classes (spelling_key)"))
        }
        var nameKeys: [ByteBuffer] = []
        var spellingKeys: [ByteBuffer] = []
        for row in try await run(PostgresQuery(unsafeSQL: "SELECT name_key, row FROM \(prefix)_classes WHERE spelling_key IS NULL")).rows {
            let (nameKey, stored) = try row.decode((ByteBuffer, ByteBuffer).self)
            // A row that does not parse (damaged) is keyed by its key's text.
            let name = stored.withUnsafeReadableBytes { StoredClass(parsing: $0)?.name }
                ?? nameKey.withUnsafeReadableBytes { String(decoding: $0, as: UTF8.self) }
            nameKeys.append(nameKey)
            spellingKeys.append(ByteBuffer(bytes: StoredClass.spellingKey(of: name, maxKeySize: maxKeySize)))
        }
        guard !nameKeys.isEmpty else { return }
        _ = try await run(PostgresQuery(
            unsafeSQL: """
                UPDATE \(prefix)_classes c SET spelling_key = u.spelling_key
                FROM unnest($1::bytea[], $2::bytea[]) AS u(name_key, spelling_key) WHERE c.name_key = u.name_key
                """,
            binds: binds(nameKeys, spellingKeys)))
    }

    /// Brings the tables from version `version` to the current one.
    private static func migrate(
        prefix: String, name: ByteBuffer, from version: Int, _ run: (PostgresQuery) async throws -> PostgresQueryResult
    ) async throws {
        if version < 2 {
            _ = try await run(PostgresQuery(unsafeSQL: "CREATE INDEX IF NOT EXISTS \(prefix)_records_class ON \(prefix)_records (class_key, key)"))
        }
        if version < 3 {
            for statement in [
                "CREATE TABLE IF NOT EXISTS \(prefix)_indexes (catalog_key bytea PRIMARY KEY, catalog_value bytea NOT NULL)",
                """
                CREATE TABLE IF NOT EXISTS \(prefix)_entries (
                    number integer NOT NULL, tuple bytea NOT NULL, key bytea NOT NULL,
                    head bytea GENERATED ALWAYS AS (substring(tuple from 1 for 1024)) STORED)
                """,
                "CREATE INDEX IF NOT EXISTS \(prefix)_entries_order ON \(prefix)_entries (number, head, key)",
                "CREATE INDEX IF NOT EXISTS \(prefix)_entries_key ON \(prefix)_entries (key)",
            ] {
                _ = try await run(PostgresQuery(unsafeSQL: statement))
            }
        }
        if version < 6 {
            // The log's entries keep their numbers, and become ticks too (in the same order); new
            // commits take ticks after them and leave their numbers to the sequencer. (Skipped for
            // a log that has its ticks: a store marked older than it is.)
            let hasTicks = try await run(PostgresQuery(unsafeSQL: """
                SELECT 1 FROM pg_attribute WHERE attrelid = '\(prefix)_log'::regclass AND attname = 'tick' AND NOT attisdropped
                """)).rows.contains { _ in true }
            var statements = [
                "CREATE SEQUENCE IF NOT EXISTS \(prefix)_ticks AS bigint MINVALUE 1 CACHE 1 NO CYCLE",
                "ALTER TABLE \(prefix)_log ADD COLUMN tick bigint",
                "UPDATE \(prefix)_log SET tick = sequence",
                "SELECT setval('\(prefix)_ticks', GREATEST((SELECT max(tick) FROM \(prefix)_log), 1))",
                "ALTER TABLE \(prefix)_log ALTER COLUMN tick SET DEFAULT nextval('\(prefix)_ticks'), ALTER COLUMN tick SET NOT NULL",
                "ALTER TABLE \(prefix)_log DROP CONSTRAINT \(prefix)_log_pkey",
                "ALTER TABLE \(prefix)_log ADD PRIMARY KEY (tick), ALTER COLUMN sequence DROP NOT NULL",
            ]
            if hasTicks { statements = [] }
            statements += [
                "CREATE UNIQUE INDEX IF NOT EXISTS \(prefix)_log_sequence ON \(prefix)_log (sequence)",
                // The entries waiting for their numbers: what the sequencer reads, and what every
                // change feed's read asks for first.
                "CREATE INDEX IF NOT EXISTS \(prefix)_log_pending ON \(prefix)_log (tick) WHERE sequence IS NULL",
            ]
            for statement in statements {
                _ = try await run(PostgresQuery(unsafeSQL: statement))
            }
            // The last number, from the store's row (where versions before 6 kept it; none for a new store).
            _ = try await run(PostgresQuery(unsafeSQL: "CREATE TABLE IF NOT EXISTS \(prefix)_sequencer (last bigint NOT NULL)"))
            _ = try await run(PostgresQuery(
                unsafeSQL: """
                    INSERT INTO \(prefix)_sequencer (last)
                    SELECT COALESCE((SELECT sequence FROM locallmdb_stores WHERE name = $1), 0)
                    WHERE NOT EXISTS (SELECT 1 FROM \(prefix)_sequencer)
                    """,
                binds: binds(name)))
        }
    }
}

import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

// Looking inside a database without its model types: what `localdb` shows (stats, types, get,
// ls). Records are named by their stored class names and ids; documents are the stored JSON.

/// What a database holds and how it uses its files, as of one snapshot.
public struct DatabaseStatistics: Sendable, Equatable, Codable {
    /// The number of records of one stored class name.
    public struct TypeCount: Sendable, Equatable, Codable {
        /// The stored class name.
        public let className: String
        /// How many records are stored under it.
        public let records: Int
    }

    /// The number of records.
    public let records: Int
    /// Each stored class name with its records, in the byte order of the names.
    public let types: [TypeCount]
    /// The size of the data file (`data.mdb`).
    public let fileBytes: Int
    /// The memory map's size: the file may grow to it before the map is enlarged.
    public let mapBytes: Int
    /// The bytes of the map in use (pages up to the last one written; free pages included).
    public let usedBytes: Int
    /// The page size.
    public let pageSize: Int
    /// The id of the last committed write transaction.
    public let lastCommit: Int
    /// The reader slots in use, by any process.
    public let readers: Int
    /// The reader slots there are.
    public let maxReaders: Int
    /// The position after the last commit in the change log (see `ChangeToken`).
    public let changeToken: ChangeToken?
}

/// A reader slot of a database's lock file in use: a process reading, or holding a slot
/// between reads (LMDB gives each reading thread one).
public struct ReaderSlot: Sendable, Equatable, Codable {
    /// The process holding the slot.
    public let process: Int32
    /// Its thread (LMDB's identifier).
    public let thread: UInt64
    /// The id of the commit it reads; nil between reads.
    public let transaction: Int?
}

/// A record as stored: its id, its stored class name and its JSON document.
public struct StoredDocument: Sendable, Equatable {
    /// The record's id.
    public let id: String
    /// The class name it is stored under.
    public let className: String
    /// The stored JSON document, byte for byte (decrypted, on an encrypted database).
    public let json: String
}

/// The class counts and total of a snapshot.
struct ReadClassCounts: PlainRead {
    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> (records: Int, types: [DatabaseStatistics.TypeCount]) {
        let types = try snapshot.classCounts().map { DatabaseStatistics.TypeCount(className: $0.className, records: $0.records) }
        return (try snapshot.count(), types)
    }
}

/// The stored document of a record.
struct ReadDocument: PlainRead {
    let id: String
    let key: StorageKey

    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> StoredDocument? {
        guard let record = try snapshot.record(key, id: id) else { return nil }
        return StoredDocument(id: id, className: record.className, json: String(decoding: record.object.extent, as: UTF8.self))
    }
}

/// The ids stored under a class name, after one (in the order of their keys' bytes, whether or
/// not it is stored) and up to a limit.
struct ReadClassIDs: PlainRead {
    let classKey: StorageKey
    let after: String?
    let limit: Int?
    let maxKeySize: Int

    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> [String] {
        var ids = try snapshot.ids(ofClasses: [classKey])[...]
        if let after {
            // Compared as the keys' bytes, the order the ids come in: never as Swift strings,
            // which take canonically equivalent texts for one.
            let afterKey = key(after)
            ids = ids.drop { afterKey.lexicographicallyPrecedes(key($0)) == false }
        }
        if let limit { ids = ids.prefix(max(0, limit)) }
        return Array(ids)
    }

    private func key(_ id: String) -> [UInt8] {
        StorageKey(id, maxKeySize: maxKeySize).bytes
    }
}

/// The indexes stored for a class name.
struct ReadIndexDefinitions: PlainRead {
    let className: String

    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> [IndexDefinition] {
        try snapshot.indexDefinitions(ofClassNamed: className)
    }
}

/// The stored documents of the records a query by class name selects.
struct ReadQueryDocuments: PlainRead {
    let query: IndexQuery

    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> [StoredDocument] {
        try snapshot.records(matching: query) { stored, id in
            StoredDocument(id: id(), className: stored.className, json: String(decoding: stored.object.extent, as: UTF8.self))
        }
    }
}

enum Inspection {
    static func statistics(_ counts: (records: Int, types: [DatabaseStatistics.TypeCount]), _ engine: FaceEngine) -> DatabaseStatistics {
        let storage = engine.writer.storageStatistics()
        return DatabaseStatistics(
            records: counts.records, types: counts.types, fileBytes: storage?.fileBytes ?? 0, mapBytes: storage?.mapBytes ?? 0,
            usedBytes: storage?.usedBytes ?? 0, pageSize: storage?.pageSize ?? 0, lastCommit: storage?.lastCommit ?? 0,
            readers: storage?.readers ?? 0, maxReaders: storage?.maxReaders ?? 0,
            changeToken: (try? engine.changeToken()).map(ChangeToken.init))
    }

    static func document(_ id: String, maxKeySize: Int) throws(DatabaseError) -> ReadDocument {
        ReadDocument(id: id, key: try RecordEncoding.recordKey(id, maxKeySize: maxKeySize))
    }

    static func ids(_ className: String, after: String?, limit: Int?, maxKeySize: Int) -> ReadClassIDs {
        ReadClassIDs(classKey: StorageKey(className, maxKeySize: maxKeySize), after: after, limit: limit, maxKeySize: maxKeySize)
    }
}

extension LocalDatabase {
    /// What the database holds (records, by stored class name) and how it uses its files.
    public nonisolated(nonsending) func statistics() async throws -> DatabaseStatistics {
        do throws(DatabaseError) {
            return Inspection.statistics(try await engine.read(ReadClassCounts()), engine)
        } catch { throw LocalDatabaseError(error) }
    }

    /// The record `id` as stored (its class name and JSON document), without its model type;
    /// nil when there is none.
    public nonisolated(nonsending) func storedDocument(id: String) async throws -> StoredDocument? {
        do throws(DatabaseError) {
            return try await engine.read(Inspection.document(id, maxKeySize: engine.maxKeySize))
        } catch { throw LocalDatabaseError(error) }
    }

    /// The ids of the records stored under the class name `className` (that name alone, not
    /// its legacy names), in the byte order of their ids (ids over 511 bytes last): those after
    /// `after` in that order (from the first when nil; `after` need not be stored), at most
    /// `limit`.
    public nonisolated(nonsending) func readIDs(ofClassNamed className: String, after: String? = nil, limit: Int? = nil) async throws -> [String] {
        do throws(DatabaseError) {
            return try await engine.read(Inspection.ids(className, after: after, limit: limit, maxKeySize: engine.maxKeySize))
        } catch { throw LocalDatabaseError(error) }
    }
}

extension LocalDatabase {
    /// The stored documents of the records stored under the class name `className` (that
    /// name alone) that meet `conditions` (each a field path, `.`-separated, and a condition),
    /// ordered by `order` (by id when nil), at most `limit`: a query without the model type,
    /// for `localdb query`. It uses the indexes stored for the class name when one serves it,
    /// and reads every record of the class otherwise (with the same results).
    package nonisolated(nonsending) func readDocuments(
        ofClassNamed className: String, where conditions: [(field: String, condition: QueryCondition)],
        orderedBy order: (field: String, descending: Bool)?, limit: Int?
    ) async throws -> [StoredDocument] {
        do throws(DatabaseError) {
            let declared = try await engine.read(ReadIndexDefinitions(className: className))
            func path(_ field: String) -> [String] { field.split(separator: ".", omittingEmptySubsequences: false).map(String.init) }
            let shape = QueryPlan.Shape(
                conditions: conditions.map { (path($0.field), $0.condition) }, order: order.map { (path($0.field), $0.descending) },
                limit: limit)
            let query = try QueryPlan.indexQuery(shape, classNames: [className], declaredIndexes: declared)
            return try await engine.read(ReadQueryDocuments(query: query))
        } catch { throw LocalDatabaseError(error) }
    }

    /// The reader slots in use by any process, after freeing, when `clearingStale`, those of
    /// processes that are gone (every open frees them too); and how many were freed.
    public nonisolated func readerSlots(clearingStale: Bool = false) throws -> (slots: [ReaderSlot], cleared: Int) {
        guard let found = engine.writer.readerSlots(clearingStale: clearingStale) else { return ([], 0) }
        return (found.slots.map { ReaderSlot(process: $0.process, thread: $0.thread, transaction: $0.transaction) }, found.cleared)
    }
}

extension SerializationDatabase {
    /// `LocalDatabase.statistics()`; nil on failure.
    public func statistics() -> DatabaseStatistics? {
        run(nil) { engine throws(DatabaseError) in Inspection.statistics(try engine.readBlocking(ReadClassCounts(), "statistics"), engine) }
    }

    /// `LocalDatabase.storedDocument(id:)`; nil when there is none or on failure.
    public func storedDocument(id: String) -> StoredDocument? {
        run(nil) { engine throws(DatabaseError) in
            try engine.readBlocking(Inspection.document(id, maxKeySize: engine.maxKeySize), "storedDocument")
        }
    }

    /// `LocalDatabase.readIDs(ofClassNamed:after:limit:)`; `[]` on failure.
    public func readIDs(ofClassNamed className: String, after: String? = nil, limit: Int? = nil) -> [String] {
        run([]) { engine throws(DatabaseError) in
            try engine.readBlocking(Inspection.ids(className, after: after, limit: limit, maxKeySize: engine.maxKeySize), "readIDs")
        }
    }
}

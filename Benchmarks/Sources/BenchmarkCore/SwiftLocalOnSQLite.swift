import Foundation
import GRDB

/// SwiftLocal's architecture, on SQLite through GRDB: one connection, one table
/// `record(id TEXT PRIMARY KEY, objectName TEXT, data TEXT)` with an index on `objectName`, WAL,
/// `synchronous=FULL`, and objects encoded as SwiftLocal's SwiftyJSON-based `DataObject` does:
/// through a `[String: Any]` and `JSONSerialization`.
public final class SwiftLocalOnSQLite: Contender {
    public static let name = "SwiftLocal on SQLite"
    let queue: DatabaseQueue
    let model: BenchModel
    /// The class name SwiftLocal stores the objects under.
    let objectName: String

    public init(directory: URL, model: BenchModel) throws {
        self.model = model
        objectName = model.className
        // SwiftLocal's transactions stay open across calls (BEGIN in one, COMMIT in another),
        // which GRDB allows only when asked.
        var configuration = Configuration()
        configuration.allowsUnsafeTransactions = true
        queue = try DatabaseQueue(path: directory.appendingPathComponent("swiftlocal.sqlite").path, configuration: configuration)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            // Set after opening: GRDB's own set-up would otherwise decide it.
            try db.execute(sql: "PRAGMA synchronous = FULL")
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS record (id TEXT PRIMARY KEY, objectName TEXT, data TEXT)")
            try db.execute(sql: "CREATE INDEX IF NOT EXISTS record_objectName ON record (objectName)")
        }
    }

    /// The synchronous setting in force (2 = FULL), for the report.
    public func synchronousSetting() throws -> Int {
        try queue.read { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 }
    }

    private static let insert = "INSERT OR REPLACE INTO record (id, objectName, data) VALUES (?, ?, ?)"

    public func writeBatch(ids: [String], firstIndex: Int) async throws {
        try await queue.write { [model, objectName] db in
            for (offset, id) in ids.enumerated() {
                let json = try DictionaryDataObject.encode(model, index: firstIndex + offset)
                try db.execute(sql: Self.insert, arguments: [id, objectName, json])
            }
        }
    }

    /// SwiftLocal's pattern: `startTransaction()` runs `BEGIN`, each `write` is its own call to
    /// the database's queue, `commitTransaction()` runs `COMMIT`.
    public func writeEachInTransaction(ids: [String], firstIndex: Int) async throws {
        try await queue.writeWithoutTransaction { db in try db.execute(sql: "BEGIN") }
        for (offset, id) in ids.enumerated() {
            let json = try DictionaryDataObject.encode(model, index: firstIndex + offset)
            try await queue.writeWithoutTransaction { [objectName] db in
                try db.execute(sql: Self.insert, arguments: [id, objectName, json])
            }
        }
        try await queue.writeWithoutTransaction { db in try db.execute(sql: "COMMIT") }
    }

    public func writeOne(id: String, index: Int) async throws {
        let json = try DictionaryDataObject.encode(model, index: index)
        try await queue.write { [objectName] db in
            try db.execute(sql: Self.insert, arguments: [id, objectName, json])
        }
    }

    public func read(id: String) async throws -> Int {
        let json = try await queue.read { db in
            try String.fetchOne(db, sql: "SELECT data FROM record WHERE id = ?", arguments: [id])
        }
        return try probe(of: json)
    }

    /// The field a read returns, of the object whose JSON is `json` (-1 when there is none).
    private func probe(of json: String?) throws -> Int {
        guard let json else { return -1 }
        switch model {
        case .student: return try DictionaryDataObject.decodeStudent(json).age
        case .wide: return try DictionaryDataObject.decodeOrder(json).quantity
        }
    }

    public func readSynchronously(id: String) throws -> Int {
        let json = try queue.read { db in
            try String.fetchOne(db, sql: "SELECT data FROM record WHERE id = ?", arguments: [id])
        }
        return try probe(of: json)
    }

    public func readAll() async throws -> ReadAllResult {
        switch model {
        case .student: try await ReadAllResult.measuring { try await fetchAllData().map(DictionaryDataObject.decodeStudent) }
        case .wide: try await ReadAllResult.measuring { try await fetchAllData().map(DictionaryDataObject.decodeOrder) }
        }
    }

    /// Every stored object's JSON.
    private func fetchAllData() async throws -> [String] {
        try await queue.read { [objectName] db in
            try String.fetchAll(db, sql: "SELECT data FROM record WHERE objectName = ?", arguments: [objectName])
        }
    }

    public func count() async throws -> Int {
        try await queue.read { [objectName] db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM record WHERE objectName = ?", arguments: [objectName]) ?? 0
        }
    }
}

import Foundation
import GRDB

/// SwiftLocal's architecture, on SQLite through GRDB: one connection, one table
/// `record(id TEXT PRIMARY KEY, objectName TEXT, data TEXT)` with an index on `objectName`, WAL,
/// `synchronous=FULL`, and objects encoded as SwiftLocal's SwiftyJSON-based `DataObject` does:
/// through a `[String: Any]` and `JSONSerialization`.
public final class SwiftLocalOnSQLite: Contender {
    public static let name = "SwiftLocal on SQLite"
    let queue: DatabaseQueue

    public init(directory: URL) throws {
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
        try await queue.write { db in
            for (offset, id) in ids.enumerated() {
                let json = try DictionaryDataObject.encode(student: firstIndex + offset)
                try db.execute(sql: Self.insert, arguments: [id, "BenchStudent", json])
            }
        }
    }

    /// SwiftLocal's pattern: `startTransaction()` runs `BEGIN`, each `write` is its own call to
    /// the database's queue, `commitTransaction()` runs `COMMIT`.
    public func writeEachInTransaction(ids: [String], firstIndex: Int) async throws {
        try await queue.writeWithoutTransaction { db in try db.execute(sql: "BEGIN") }
        for (offset, id) in ids.enumerated() {
            let json = try DictionaryDataObject.encode(student: firstIndex + offset)
            try await queue.writeWithoutTransaction { db in
                try db.execute(sql: Self.insert, arguments: [id, "BenchStudent", json])
            }
        }
        try await queue.writeWithoutTransaction { db in try db.execute(sql: "COMMIT") }
    }

    public func writeOne(id: String, index: Int) async throws {
        let json = try DictionaryDataObject.encode(student: index)
        try await queue.write { db in
            try db.execute(sql: Self.insert, arguments: [id, "BenchStudent", json])
        }
    }

    public func read(id: String) async throws -> Int {
        let json = try await queue.read { db in
            try String.fetchOne(db, sql: "SELECT data FROM record WHERE id = ?", arguments: [id])
        }
        guard let json else { return -1 }
        return try DictionaryDataObject.decodeStudent(json).age
    }

    public func readAll() async throws -> Int {
        let rows = try await queue.read { db in
            try String.fetchAll(db, sql: "SELECT data FROM record WHERE objectName = ?", arguments: ["BenchStudent"])
        }
        let students = try rows.map(DictionaryDataObject.decodeStudent)
        return students.count
    }

    public func count() async throws -> Int {
        try await queue.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM record WHERE objectName = ?", arguments: ["BenchStudent"]) ?? 0
        }
    }
}

/// SwiftLocal's DataObject, reduced to what the benchmark needs: a `[String: Any]` (SwiftyJSON's
/// storage) serialized with `JSONSerialization`, with nested objects as nested dictionaries.
enum DictionaryDataObject {
    struct Student {
        var firstName: String, lastName: String, email: String
        var age: Int, enrolmentYear: Int, gpa: Double
        var subjects: [String]
        var street: String, city: String, postcode: String
    }

    static func encode(student index: Int) throws -> String {
        let source = BenchStudent(index: index)
        var address: [String: Any] = ["object": "BenchAddress"]
        address["street"] = source.address.street
        address["city"] = source.address.city
        address["postcode"] = source.address.postcode
        var json: [String: Any] = ["object": "BenchStudent"]
        json["firstName"] = source.firstName
        json["lastName"] = source.lastName
        json["email"] = source.email
        json["age"] = source.age
        json["enrolmentYear"] = source.enrolmentYear
        json["gpa"] = source.gpa
        json["subjects"] = source.subjects
        json["address"] = address
        let data = try JSONSerialization.data(withJSONObject: json)
        return String(decoding: data, as: UTF8.self)
    }

    static func decodeStudent(_ text: String) throws -> Student {
        let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] ?? [:]
        let address = object["address"] as? [String: Any] ?? [:]
        return Student(
            firstName: object["firstName"] as? String ?? "",
            lastName: object["lastName"] as? String ?? "",
            email: object["email"] as? String ?? "",
            age: object["age"] as? Int ?? 0,
            enrolmentYear: object["enrolmentYear"] as? Int ?? 0,
            gpa: object["gpa"] as? Double ?? 0,
            subjects: object["subjects"] as? [String] ?? [],
            street: address["street"] as? String ?? "",
            city: address["city"] as? String ?? "",
            postcode: address["postcode"] as? String ?? "")
    }
}

import Foundation
import GRDB

/// Idiomatic GRDB: a Codable record type with real columns (the array and the nested value as
/// JSON columns, as GRDB encodes them), a `DatabasePool`, WAL and `synchronous=FULL`.
public final class GRDBCodable: Contender {
    public static let name = "GRDB Codable"
    let pool: DatabasePool

    struct Address: Codable {
        var street: String
        var city: String
        var postcode: String
    }

    struct StudentRow: Codable, FetchableRecord, PersistableRecord {
        static let databaseTableName = "student"
        var id: String
        var firstName: String
        var lastName: String
        var email: String
        var age: Int
        var enrolmentYear: Int
        var gpa: Double
        var subjects: [String]
        var address: Address

        init(id: String, index: Int) {
            let source = BenchStudent(index: index)
            self.id = id
            firstName = source.firstName
            lastName = source.lastName
            email = source.email
            age = source.age
            enrolmentYear = source.enrolmentYear
            gpa = source.gpa
            subjects = source.subjects
            address = Address(street: source.address.street, city: source.address.city, postcode: source.address.postcode)
        }
    }

    public init(directory: URL) throws {
        pool = try DatabasePool(path: directory.appendingPathComponent("grdb.sqlite").path)
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            try db.create(table: "student", ifNotExists: true) { table in
                table.primaryKey("id", .text)
                table.column("firstName", .text).notNull()
                table.column("lastName", .text).notNull()
                table.column("email", .text).notNull()
                table.column("age", .integer).notNull()
                table.column("enrolmentYear", .integer).notNull()
                table.column("gpa", .double).notNull()
                table.column("subjects", .jsonText).notNull()
                table.column("address", .jsonText).notNull()
            }
        }
    }

    /// The synchronous setting in force on the writer (2 = FULL), for the report.
    public func synchronousSetting() throws -> Int {
        try pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 }
    }

    public func writeBatch(ids: [String], firstIndex: Int) async throws {
        try await pool.write { db in
            for (offset, id) in ids.enumerated() {
                try StudentRow(id: id, index: firstIndex + offset).insert(db, onConflict: .replace)
            }
        }
    }

    public func writeOne(id: String, index: Int) async throws {
        let row = StudentRow(id: id, index: index)
        try await pool.write { db in try row.insert(db, onConflict: .replace) }
    }

    public func read(id: String) async throws -> Int {
        let row = try await pool.read { db in try StudentRow.fetchOne(db, key: id) }
        return row?.age ?? -1
    }

    public func readAll() async throws -> Int {
        try await pool.read { db in try StudentRow.fetchAll(db) }.count
    }

    public func count() async throws -> Int {
        try await pool.read { db in try StudentRow.fetchCount(db) }
    }
}

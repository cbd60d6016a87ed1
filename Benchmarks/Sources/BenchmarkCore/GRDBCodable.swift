import Foundation
import GRDB

/// Idiomatic GRDB: a Codable record type with real columns (arrays and nested values as JSON
/// columns, as GRDB encodes them), a `DatabasePool`, WAL and `synchronous=FULL`. The record
/// types are in GRDBCodable+Rows.swift.
public final class GRDBCodable: Contender {
    public static let name = "GRDB Codable"
    let pool: DatabasePool
    let model: BenchModel

    public init(directory: URL, model: BenchModel) throws {
        self.model = model
        pool = try DatabasePool(path: directory.appendingPathComponent("grdb.sqlite").path)
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            switch model {
            case .student: try StudentRow.createTable(db)
            case .wide: try OrderRow.createTable(db)
            }
        }
    }

    /// The synchronous setting in force on the writer (2 = FULL), for the report.
    public func synchronousSetting() throws -> Int {
        try pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 }
    }

    public func writeBatch(ids: [String], firstIndex: Int) async throws {
        switch model {
        case .student: try await writeBatch(StudentRow.self, ids: ids, firstIndex: firstIndex)
        case .wide: try await writeBatch(OrderRow.self, ids: ids, firstIndex: firstIndex)
        }
    }

    public func writeOne(id: String, index: Int) async throws {
        switch model {
        case .student: try await writeOne(StudentRow(id: id, index: index))
        case .wide: try await writeOne(OrderRow(id: id, index: index))
        }
    }

    public func read(id: String) async throws -> Int {
        switch model {
        case .student: try await pool.read { db in try StudentRow.fetchOne(db, key: id) }?.age ?? -1
        case .wide: try await pool.read { db in try OrderRow.fetchOne(db, key: id) }?.quantity ?? -1
        }
    }

    public func readSynchronously(id: String) throws -> Int {
        switch model {
        case .student: try pool.read { db in try StudentRow.fetchOne(db, key: id) }?.age ?? -1
        case .wide: try pool.read { db in try OrderRow.fetchOne(db, key: id) }?.quantity ?? -1
        }
    }

    public func readAll() async throws -> ReadAllResult {
        switch model {
        case .student: try await ReadAllResult.measuring { try await pool.read { db in try StudentRow.fetchAll(db) } }
        case .wide: try await ReadAllResult.measuring { try await pool.read { db in try OrderRow.fetchAll(db) } }
        }
    }

    public func count() async throws -> Int {
        switch model {
        case .student: try await pool.read { db in try StudentRow.fetchCount(db) }
        case .wide: try await pool.read { db in try OrderRow.fetchCount(db) }
        }
    }

    private func writeBatch<Row: BenchRow>(_ type: Row.Type, ids: [String], firstIndex: Int) async throws {
        try await pool.write { db in
            for (offset, id) in ids.enumerated() {
                try Row(id: id, index: firstIndex + offset).insert(db, onConflict: .replace)
            }
        }
    }

    private func writeOne<Row: BenchRow>(_ row: Row) async throws {
        try await pool.write { db in try row.insert(db, onConflict: .replace) }
    }
}

import Foundation
import LocalLMDB

/// LocalLMDB with a Codable model: the same public API, workloads and Student data as
/// `LocalLMDBContender`, with `BenchCodableStudent` (synthesized `Codable`) in place of the
/// hand-written `BenchStudent`.
public final class LocalLMDBCodableContender: Contender {
    public static let name = "LocalLMDB (Codable)"
    let database: LocalDatabase

    public init(directory: URL) throws {
        database = try LocalDatabase(directory: directory)
    }

    /// LocalLMDB's batch API: every record built by the caller, then encoded and written in one transaction.
    public func writeBatch(ids: [String], firstIndex: Int) async throws {
        let records = ids.enumerated().map { Record(id: $0.element, data: BenchCodableStudent(index: firstIndex + $0.offset)) }
        try await database.write(contentsOf: records)
    }

    /// SwiftLocal's documented pattern: a transaction, a `write` per record, a commit.
    public func writeEachInTransaction(ids: [String], firstIndex: Int) async throws {
        try await database.startTransaction()
        for (offset, id) in ids.enumerated() {
            try await database.write(Record(id: id, data: BenchCodableStudent(index: firstIndex + offset)))
        }
        try await database.commitTransaction()
    }

    public func writeOne(id: String, index: Int) async throws {
        try await database.write(Record(id: id, data: BenchCodableStudent(index: index)))
    }

    public func read(id: String) async throws -> Int {
        let student: BenchCodableStudent? = try await database.read(id: id)
        return student?.age ?? -1
    }

    public func readAll() async throws -> Int {
        let students: [BenchCodableStudent] = try await database.read()
        return students.count
    }

    public func count() async throws -> Int {
        try await database.count(BenchCodableStudent.self)
    }
}

import Foundation
import LocalLMDB

/// LocalLMDB, used as an application would: the public API only.
public final class LocalLMDBContender: Contender {
    public static let name = "LocalLMDB"
    let database: LocalDatabase

    public init(directory: URL) throws {
        database = try LocalDatabase(directory: directory)
    }

    /// LocalLMDB's batch API: every record encoded by the caller, then written in one transaction.
    public func writeBatch(ids: [String], firstIndex: Int) async throws {
        let records = ids.enumerated().map { Record(id: $0.element, data: BenchStudent(index: firstIndex + $0.offset)) }
        try await database.write(contentsOf: records)
    }

    /// SwiftLocal's documented pattern: a transaction, a `write` per record, a commit.
    public func writeEachInTransaction(ids: [String], firstIndex: Int) async throws {
        try await database.startTransaction()
        for (offset, id) in ids.enumerated() {
            try await database.write(Record(id: id, data: BenchStudent(index: firstIndex + offset)))
        }
        try await database.commitTransaction()
    }

    public func writeOne(id: String, index: Int) async throws {
        try await database.write(Record(id: id, data: BenchStudent(index: index)))
    }

    public func read(id: String) async throws -> Int {
        let student: BenchStudent? = try await database.read(id: id)
        return student?.age ?? -1
    }

    public func readAll() async throws -> Int {
        let students: [BenchStudent] = try await database.read()
        return students.count
    }

    public func count() async throws -> Int {
        try await database.count(BenchStudent.self)
    }
}

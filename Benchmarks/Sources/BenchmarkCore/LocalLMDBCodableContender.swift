import Foundation
import LocalLMDB

/// LocalLMDB with Codable models: the same public API, workloads and data as `LocalLMDBContender`,
/// with `BenchCodableStudent` and `BenchCodableOrder` (synthesized `Codable`) in place of the
/// hand-written `BenchStudent` and `BenchOrder`.
public final class LocalLMDBCodableContender: Contender {
    public static let name = "LocalLMDB (Codable)"
    let database: LocalDatabase
    let model: BenchModel

    public init(directory: URL, model: BenchModel) throws {
        database = try LocalDatabase(directory: directory)
        self.model = model
    }

    /// LocalLMDB's batch API: every record built by the caller, then encoded and written in one transaction.
    public func writeBatch(ids: [String], firstIndex: Int) async throws {
        switch model {
        case .student: try await writeBatch(BenchCodableStudent.self, ids: ids, firstIndex: firstIndex)
        case .wide: try await writeBatch(BenchCodableOrder.self, ids: ids, firstIndex: firstIndex)
        }
    }

    /// SwiftLocal's documented pattern: a transaction, a `write` per record, a commit.
    public func writeEachInTransaction(ids: [String], firstIndex: Int) async throws {
        switch model {
        case .student: try await writeEachInTransaction(BenchCodableStudent.self, ids: ids, firstIndex: firstIndex)
        case .wide: try await writeEachInTransaction(BenchCodableOrder.self, ids: ids, firstIndex: firstIndex)
        }
    }

    public func writeOne(id: String, index: Int) async throws {
        switch model {
        case .student: try await database.write(Record(id: id, data: BenchCodableStudent(index: index)))
        case .wide: try await database.write(Record(id: id, data: BenchCodableOrder(index: index)))
        }
    }

    public func read(id: String) async throws -> Int {
        switch model {
        case .student: try await read(BenchCodableStudent.self, id: id)
        case .wide: try await read(BenchCodableOrder.self, id: id)
        }
    }

    public func readAll() async throws -> ReadAllResult {
        switch model {
        case .student: try await ReadAllResult.measuring { try await database.read() as [BenchCodableStudent] }
        case .wide: try await ReadAllResult.measuring { try await database.read() as [BenchCodableOrder] }
        }
    }

    public func count() async throws -> Int {
        switch model {
        case .student: try await database.count(BenchCodableStudent.self)
        case .wide: try await database.count(BenchCodableOrder.self)
        }
    }

    private func writeBatch<T: Persistable & Codable & BenchObject>(_ type: T.Type, ids: [String], firstIndex: Int) async throws {
        let records = ids.enumerated().map { Record(id: $0.element, data: T(index: firstIndex + $0.offset)) }
        try await database.write(contentsOf: records)
    }

    private func writeEachInTransaction<T: Persistable & Codable & BenchObject>(_ type: T.Type, ids: [String], firstIndex: Int) async throws {
        try await database.startTransaction()
        for (offset, id) in ids.enumerated() {
            try await database.write(Record(id: id, data: T(index: firstIndex + offset)))
        }
        try await database.commitTransaction()
    }

    private func read<T: Persistable & Codable & BenchObject>(_ type: T.Type, id: String) async throws -> Int {
        let object: T? = try await database.read(id: id)
        return object?.probe ?? -1
    }
}

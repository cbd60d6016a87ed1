import Foundation
import LocalLMDB

/// LocalLMDB, used as an application would: the public API only, with hand-written `Storable`
/// models (`BenchStudent`, `BenchOrder`).
public final class LocalLMDBContender: Contender {
    public static let name = "LocalLMDB"
    let database: LocalDatabase
    let model: BenchModel

    public init(directory: URL, model: BenchModel) throws {
        database = try LocalDatabase(directory: directory)
        self.model = model
    }

    /// LocalLMDB's batch API: every record built by the caller, then encoded and written in one transaction.
    public func writeBatch(ids: [String], firstIndex: Int) async throws {
        switch model {
        case .student: try await writeBatch(BenchStudent.self, ids: ids, firstIndex: firstIndex)
        case .wide: try await writeBatch(BenchOrder.self, ids: ids, firstIndex: firstIndex)
        }
    }

    /// SwiftLocal's documented pattern: a transaction, a `write` per record, a commit.
    public func writeEachInTransaction(ids: [String], firstIndex: Int) async throws {
        switch model {
        case .student: try await writeEachInTransaction(BenchStudent.self, ids: ids, firstIndex: firstIndex)
        case .wide: try await writeEachInTransaction(BenchOrder.self, ids: ids, firstIndex: firstIndex)
        }
    }

    public func writeOne(id: String, index: Int) async throws {
        switch model {
        case .student: try await database.write(Record(id: id, data: BenchStudent(index: index)))
        case .wide: try await database.write(Record(id: id, data: BenchOrder(index: index)))
        }
    }

    public func read(id: String) async throws -> Int {
        switch model {
        case .student: try await read(BenchStudent.self, id: id)
        case .wide: try await read(BenchOrder.self, id: id)
        }
    }

    public func readAll() async throws -> ReadAllResult {
        switch model {
        case .student: try await ReadAllResult.measuring { try await database.read() as [BenchStudent] }
        case .wide: try await ReadAllResult.measuring { try await database.read() as [BenchOrder] }
        }
    }

    public func count() async throws -> Int {
        switch model {
        case .student: try await database.count(BenchStudent.self)
        case .wide: try await database.count(BenchOrder.self)
        }
    }

    private func writeBatch<T: Storable & BenchObject>(_ type: T.Type, ids: [String], firstIndex: Int) async throws {
        let records = ids.enumerated().map { Record(id: $0.element, data: T(index: firstIndex + $0.offset)) }
        try await database.write(contentsOf: records)
    }

    private func writeEachInTransaction<T: Storable & BenchObject>(_ type: T.Type, ids: [String], firstIndex: Int) async throws {
        try await database.startTransaction()
        for (offset, id) in ids.enumerated() {
            try await database.write(Record(id: id, data: T(index: firstIndex + offset)))
        }
        try await database.commitTransaction()
    }

    private func read<T: Storable & BenchObject>(_ type: T.Type, id: String) async throws -> Int {
        let object: T? = try await database.read(id: id)
        return object?.probe ?? -1
    }
}

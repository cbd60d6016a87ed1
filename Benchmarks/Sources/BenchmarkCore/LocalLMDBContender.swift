import Foundation
import LocalLMDB
import LocalLMDBEncryption

/// The models one LocalLMDB contender stores: hand-written `Storable` classes or synthesized
/// `Codable` structs, the same data either way (`Fixture.codableMatchesHandWritten`).
public protocol LocalLMDBModels {
    associatedtype Student: Persistable & BenchObject
    associatedtype Order: Persistable & BenchObject
    /// The contender's name in the table.
    static var name: String { get }
    /// How the contender opens its database.
    static func configuration() throws -> DatabaseConfiguration
}

extension LocalLMDBModels {
    public static func configuration() throws -> DatabaseConfiguration { DatabaseConfiguration() }
}

/// `BenchStudent` and `BenchOrder`, written by hand.
public enum HandWrittenModels: LocalLMDBModels {
    public typealias Student = BenchStudent
    public typealias Order = BenchOrder
    public static let name = "LocalLMDB"
}

/// `BenchCodableStudent` and `BenchCodableOrder`, with synthesized `Codable`.
public enum CodableModels: LocalLMDBModels {
    public typealias Student = BenchCodableStudent
    public typealias Order = BenchCodableOrder
    public static let name = "LocalLMDB (Codable)"
}

/// `BenchStudent` and `BenchOrder`, written by hand, in a database encrypted at rest
/// (`AESGCMCipher`, a random 256-bit key): the cost of encryption, beside `HandWrittenModels`.
public enum EncryptedModels: LocalLMDBModels {
    public typealias Student = BenchStudent
    public typealias Order = BenchOrder
    public static let name = "LocalLMDB (encrypted)"

    public static func configuration() throws -> DatabaseConfiguration {
        var configuration = DatabaseConfiguration()
        configuration.encryption = DatabaseEncryption(try AESGCMCipher(current: try EncryptionKey.random(id: "bench")))
        return configuration
    }
}

/// LocalLMDB, used as an application would: the public API only, with the models of `Models`.
public final class LocalLMDBContender<Models: LocalLMDBModels>: Contender {
    public static var name: String { Models.name }
    let database: LocalDatabase
    /// The synchronous face on the same database, for `readSynchronously`.
    let synchronous: SerializationDatabase
    let model: BenchModel

    public init(directory: URL, model: BenchModel) throws {
        let configuration = try Models.configuration()
        database = try LocalDatabase(directory: directory, configuration: configuration)
        synchronous = try SerializationDatabase(directory: directory, configuration: configuration)
        self.model = model
    }

    /// LocalLMDB's batch API: every record built by the caller, then encoded and written in one transaction.
    public func writeBatch(ids: [String], firstIndex: Int) async throws {
        switch model {
        case .student: try await writeBatch(Models.Student.self, ids: ids, firstIndex: firstIndex)
        case .wide: try await writeBatch(Models.Order.self, ids: ids, firstIndex: firstIndex)
        }
    }

    /// SwiftLocal's documented pattern: a transaction, a `write` per record, a commit.
    public func writeEachInTransaction(ids: [String], firstIndex: Int) async throws {
        switch model {
        case .student: try await writeEachInTransaction(Models.Student.self, ids: ids, firstIndex: firstIndex)
        case .wide: try await writeEachInTransaction(Models.Order.self, ids: ids, firstIndex: firstIndex)
        }
    }

    public func writeOne(id: String, index: Int) async throws {
        switch model {
        case .student: try await database.write(Record(id: id, data: Models.Student(index: index)))
        case .wide: try await database.write(Record(id: id, data: Models.Order(index: index)))
        }
    }

    public func read(id: String) async throws -> Int {
        switch model {
        case .student: try await read(Models.Student.self, id: id)
        case .wide: try await read(Models.Order.self, id: id)
        }
    }

    public func readSynchronously(id: String) throws -> Int {
        switch model {
        case .student: (synchronous.read(id: id) as Models.Student?)?.probe ?? -1
        case .wide: (synchronous.read(id: id) as Models.Order?)?.probe ?? -1
        }
    }

    public func readAll() async throws -> ReadAllResult {
        switch model {
        case .student: try await ReadAllResult.measuring { try await database.read() as [Models.Student] }
        case .wide: try await ReadAllResult.measuring { try await database.read() as [Models.Order] }
        }
    }

    public func count() async throws -> Int {
        switch model {
        case .student: try await database.count(Models.Student.self)
        case .wide: try await database.count(Models.Order.self)
        }
    }

    private func writeBatch<T: Persistable & BenchObject>(_ type: T.Type, ids: [String], firstIndex: Int) async throws {
        let records = ids.enumerated().map { Record(id: $0.element, data: T(index: firstIndex + $0.offset)) }
        try await database.write(contentsOf: records)
    }

    private func writeEachInTransaction<T: Persistable & BenchObject>(_ type: T.Type, ids: [String], firstIndex: Int) async throws {
        try await database.startTransaction()
        for (offset, id) in ids.enumerated() {
            try await database.write(Record(id: id, data: T(index: firstIndex + offset)))
        }
        try await database.commitTransaction()
    }

    private func read<T: Persistable & BenchObject>(_ type: T.Type, id: String) async throws -> Int {
        let object: T? = try await database.read(id: id)
        return object?.probe ?? -1
    }
}

/// LocalLMDB with hand-written models.
public typealias LocalLMDBHandWrittenContender = LocalLMDBContender<HandWrittenModels>
/// LocalLMDB with hand-written models, encrypted at rest.
public typealias LocalLMDBEncryptedContender = LocalLMDBContender<EncryptedModels>
/// LocalLMDB with Codable models.
public typealias LocalLMDBCodableContender = LocalLMDBContender<CodableModels>

import Foundation

/// One store under comparison. Every workload builds its objects from indices inside the
/// contender, so each pays for its own object construction, encoding and decoding. A contender
/// stores one model (`BenchModel`), in its own idiom.
public protocol Contender: Sendable {
    /// The name shown in the table.
    static var name: String { get }
    /// Opens a fresh store in `directory` for objects of `model`.
    init(directory: URL, model: BenchModel) throws
    /// Writes one object per id in a single transaction.
    func writeBatch(ids: [String], firstIndex: Int) async throws
    /// Writes one object per id in a single transaction, with one write call per object: the
    /// bulk pattern SwiftLocal documents (`startTransaction`, `write` each, `commitTransaction`).
    func writeEachInTransaction(ids: [String], firstIndex: Int) async throws
    /// Writes one object in its own durable transaction.
    func writeOne(id: String, index: Int) async throws
    /// Reads one object by id; returns a field so the read cannot be optimised away.
    func read(id: String) async throws -> Int
    /// The same read through the store's synchronous API, on the calling thread: LocalLMDB's
    /// `SerializationDatabase`, GRDB's synchronous `read`. Beside `read(id:)`, it shows how much
    /// of a ratio of asynchronous reads is the hop an asynchronous API makes (GRDB's to its queue).
    func readSynchronously(id: String) throws -> Int
    /// Reads every stored object, inside `ReadAllResult.measuring`, which measures the read and
    /// the memory its objects hold.
    func readAll() async throws -> ReadAllResult
    /// Counts the stored objects of the type.
    func count() async throws -> Int
}

extension Contender {
    /// For stores whose batch write already is one transaction with a call per object (GRDB's
    /// `write {}` with a save per record, raw LMDB's puts), the same.
    public func writeEachInTransaction(ids: [String], firstIndex: Int) async throws {
        try await writeBatch(ids: ids, firstIndex: firstIndex)
    }
}

import Foundation

/// One store under comparison. Every workload builds its objects from indices inside the
/// contender, so each pays for its own object construction, encoding and decoding.
public protocol Contender: Sendable {
    /// The name shown in the table.
    static var name: String { get }
    /// Opens a fresh store in `directory`.
    init(directory: URL) throws
    /// Writes one object per id in a single transaction.
    func writeBatch(ids: [String], firstIndex: Int) async throws
    /// Writes one object per id in a single transaction, with one write call per object: the
    /// bulk pattern SwiftLocal documents (`startTransaction`, `write` each, `commitTransaction`).
    func writeEachInTransaction(ids: [String], firstIndex: Int) async throws
    /// Writes one object in its own durable transaction.
    func writeOne(id: String, index: Int) async throws
    /// Reads one object by id; returns a field so the read cannot be optimised away.
    func read(id: String) async throws -> Int
    /// Reads every stored object; returns how many.
    func readAll() async throws -> Int
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

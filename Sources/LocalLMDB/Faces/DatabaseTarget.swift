import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// SwiftSerialization's synchronous database API: every method returns its result directly,
/// and a failure is its failure value (`false`, `nil`, `0`, `[]`) rather than an error.
///
/// `SerializationDatabase` conforms; code written against SwiftSerialization's
/// `DatabaseTarget` compiles against LocalLMDB unchanged.
public protocol DatabaseTarget: AnyObject {
    /// Writes a record, replacing any record with the same id. Returns whether it was stored.
    @discardableResult func write<T: Persistable>(_ record: Record<T>) -> Bool
    /// Every object stored as `T`.
    func read<T: Persistable>() -> [T]
    /// The object stored under `id`; nil when there is none (or on failure).
    func read<T: Persistable>(id: String) -> T?
    /// The ids of every record stored as `T`.
    func readIDs<T: Persistable>(_ allOf: T.Type) -> [String]
    /// Deletes every record stored as `T`. Returns how many were deleted.
    @discardableResult func delete<T: Persistable>(_ allOf: T.Type) -> Int
    /// Deletes the record `id`. Returns whether one was deleted.
    @discardableResult func delete(id: String) -> Bool
    /// Deletes every record. Returns how many were deleted.
    @discardableResult func clearDatabase() -> Int
    /// The number of records.
    func count() -> Int
    /// The number of records stored as `T`.
    func count<T: Persistable>(_ allOf: T.Type) -> Int
    /// Begins a transaction; with `override`, rolls back an open one first. Returns whether one began.
    @discardableResult func startTransaction(override: Bool) -> Bool
    /// Commits the open transaction. Returns whether it was committed.
    @discardableResult func commitTransaction() -> Bool
    /// Rolls back the open transaction. Returns whether one was rolled back.
    @discardableResult func rollbackTransaction() -> Bool
    /// Whether a transaction is open.
    var transactionActive: Bool { get }
}

extension DatabaseTarget {
    /// Begins a transaction, rolling back one that is open (`startTransaction(override: true)`).
    @discardableResult
    public func startTransaction() -> Bool {
        startTransaction(override: true)
    }
}

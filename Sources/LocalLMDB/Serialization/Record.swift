import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// A `Storable` object together with the id it is stored under.
public final class Record<T: Persistable> {
    /// The record's id: one or more bytes of UTF-8, of any length.
    public let id: String
    /// The stored object.
    public let data: T

    /// Creates a record. Without an `id`, a random UUID string is used.
    public init(id: String = UUID().uuidString, data: T) {
        self.id = id
        self.data = data
    }
}

/// A record is immutable: it can cross isolation domains when its object can.
extension Record: Sendable where T: Sendable {}

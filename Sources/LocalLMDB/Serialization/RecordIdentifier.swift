import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// An `Identifiable` model's id type that gives the record id it is stored under, so the model
/// can be written and deleted without a `Record` (`write(person)`, `delete(person)`).
///
/// `String`, `Substring`, the integer types and `UUID` conform. Conform your own id types by
/// giving a string that is unique per id, never empty, and never changes for a given id (it
/// is the key the record is stored under).
public protocol RecordIdentifier {
    /// The record id for this id.
    var recordID: String { get }
}

extension String: RecordIdentifier {
    /// The string itself.
    public var recordID: String { self }
}

extension Substring: RecordIdentifier {
    /// The substring as a string.
    public var recordID: String { String(self) }
}

extension UUID: RecordIdentifier {
    /// `uuidString` (upper case, as `Record`'s default ids).
    public var recordID: String { uuidString }
}

extension Int: RecordIdentifier {
    /// The decimal digits (`"42"`, `"-7"`).
    public var recordID: String { String(self) }
}

extension Int64: RecordIdentifier {
    /// The decimal digits.
    public var recordID: String { String(self) }
}

extension Int32: RecordIdentifier {
    /// The decimal digits.
    public var recordID: String { String(self) }
}

extension UInt: RecordIdentifier {
    /// The decimal digits.
    public var recordID: String { String(self) }
}

extension UInt64: RecordIdentifier {
    /// The decimal digits.
    public var recordID: String { String(self) }
}

extension UInt32: RecordIdentifier {
    /// The decimal digits.
    public var recordID: String { String(self) }
}

extension Record where T: Identifiable, T.ID: RecordIdentifier {
    /// A record of `model` under its own id (`model.id.recordID`).
    public convenience init(_ model: T) {
        self.init(id: model.id.recordID, data: model)
    }
}

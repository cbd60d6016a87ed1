import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// A type that can be written to and read from a `LocalDatabase`.
///
/// Conforming classes describe their stored fields in `toDataObject()`, starting from
/// `DataObject(self)` (which records the class name), and restore them in `init(dataObject:)`
/// with `DataObject.get`, which never fails: a missing or mistyped field gives a default.
/// Subclasses override `toDataObject()` by calling `super.toDataObject()` and adding their own
/// fields, so a subclass is stored, and restored, as itself.
public protocol Storable: Persistable {
    /// The fields to store, in a `DataObject` created with `DataObject(self)`.
    func toDataObject() -> DataObject
    /// Restores an instance from stored fields.
    init(dataObject: DataObject)
}

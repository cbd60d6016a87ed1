import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore

/// Where a record stands with respect to a remote service (GarageStorage's `SyncStatus`).
public enum SyncStatus: Int, Sendable, Hashable, Codable, CaseIterable {
    /// Not set yet, or not determined.
    case undetermined
    /// The record has changes the service has not received.
    case notSynced
    /// The record is being sent to the service.
    case syncing
    /// The service has the record as it is stored.
    case synced
}

/// A model whose records carry a sync status, as GarageStorage's `Syncable` objects do.
///
/// The status is stored in the record as the member `syncStatus` (its raw value), indexed like
/// any index the type declares, so ``LocalDatabase/read(withStatus:)`` costs no scan. A write
/// stores the model's own `syncStatus`, as GarageStorage's `park` does: the model says where it
/// stands (a new model's `.undetermined`, or `.notSynced` if it sets so when changed).
/// ``LocalDatabase/setSyncStatus(_:forIDs:of:)`` changes the stored status alone, in the stored
/// bytes, without the model being encoded again; a read sets the model's `syncStatus` from the
/// record. While the database synchronizes with a server, the synchronizer keeps the status
/// (`.notSynced` on each local write, `.synced` once the server has the record as stored): see
/// <doc:SyncingDevices>.
public protocol Syncable: Persistable {
    /// The record's sync status.
    var syncStatus: SyncStatus { get set }
}

extension Syncable {
    /// The member the status is stored under.
    static var syncStatusKey: String { "syncStatus" }

    /// The status stored in `dataObject`; `.undetermined` when missing or unknown.
    static func storedStatus(in dataObject: DataObject) -> SyncStatus {
        SyncStatus(rawValue: dataObject.get(syncStatusKey, onFail: 0)) ?? .undetermined
    }
}

extension Storable where Self: Syncable {
    /// `toDataObject()`, with the sync status.
    public func _storedFields() throws -> DataObject {
        toDataObject().add(key: Self.syncStatusKey, value: syncStatus.rawValue)
    }

    /// `init(dataObject:)`, then the stored sync status.
    public static func _restore(from dataObject: DataObject) throws -> Self {
        var object = Self(dataObject: dataObject)
        object.syncStatus = storedStatus(in: dataObject)
        return object
    }
}

extension Persistable where Self: Syncable & Encodable {
    /// The value's `Encodable` fields, with the sync status.
    public func _storedFields() throws -> DataObject {
        try ModelEncoder.dataObject(encoding: self).add(key: Self.syncStatusKey, value: syncStatus.rawValue)
    }
}

extension Persistable where Self: Syncable & Decodable {
    /// The value decoded by its `Decodable` conformance, then the stored sync status.
    public static func _restore(from dataObject: DataObject) throws -> Self {
        var value = try ModelDecoder.decode(self, from: dataObject)
        value.syncStatus = storedStatus(in: dataObject)
        return value
    }
}

extension Storable where Self: Syncable & Encodable {
    /// `toDataObject()`, with the sync status.
    public func _storedFields() throws -> DataObject {
        toDataObject().add(key: Self.syncStatusKey, value: syncStatus.rawValue)
    }
}

extension Storable where Self: Syncable & Decodable {
    /// `init(dataObject:)`, then the stored sync status.
    public static func _restore(from dataObject: DataObject) throws -> Self {
        var object = Self(dataObject: dataObject)
        object.syncStatus = storedStatus(in: dataObject)
        return object
    }
}

/// The stored sync status of one record, read from its bytes (the model is not decoded); nil
/// when there is no record of the type under the id.
struct ReadSyncStatus: PlainRead {
    let key: StorageKey
    let id: String
    let classNames: [String]

    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> SyncStatus? {
        guard let record = try snapshot.record(key, id: id), classNames.contains(record.className) else { return nil }
        let object = record.object
        guard let member = object.member(named: "syncStatus", from: nil),
              let (raw, _) = object.scanner.read(Int.self, at: member.value) else { return .undetermined }
        return SyncStatus(rawValue: raw) ?? .undetermined
    }
}

/// The ids of the records of every `Syncable` class with a stored status, by class name, from
/// each class's status index.
struct ReadIDsWithStatus: PlainRead {
    let status: SyncStatus

    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> [String: [String]] {
        let definition = IndexDeclarations.syncStatusIndex
        var key: [UInt8] = []
        Array(String(status.rawValue).utf8).withBytes { IndexKey.append(valueAt: 0, in: JSONScanner($0), kind: .automatic, to: &key) }
        var ids: [String: [String]] = [:]
        for className in try snapshot.classNames(indexedBy: definition) {
            let query = IndexQuery(classNames: [className], definition: definition, ranges: [.prefix(key)], descending: false, offset: 0, limit: nil)
            let found = try snapshot.ids(matching: query)
            if !found.isEmpty { ids[className] = found }
        }
        return ids
    }
}

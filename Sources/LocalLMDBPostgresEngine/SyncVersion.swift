import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine
import PostgresNIO

/// A record's version on the server: its stamp, whether it is a deletion, its stored value.
package struct SyncVersion: Sendable {
    package var key: [UInt8]
    /// The record's id when the server knows it without its value (a tombstone a device wrote).
    package var id: String?
    package var stamp: SyncStamp
    package var deleted: Bool
    /// The stored `RecordValue`; nil for a deletion, and for a version read without its value.
    package var value: [UInt8]?
    /// Whether the version is a record whose value was not read (`syncVersions(omitting:)`).
    package var omitted = false
}

/// Versions read from the server, with every class row, and the position they reflect (for a
/// full copy, read in one snapshot).
package struct SyncFetched: Sendable {
    package var versions: [SyncVersion] = []
    package var classRows: [StoredClass] = []
    package var position: LogPosition?

    package init() {}
}

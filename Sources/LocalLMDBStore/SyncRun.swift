import LocalLMDBLMDB

/// What a synchronizer brings back from the server in one transaction (`WriteOperation.synchronize`):
/// the server's versions of records, each with its stamp, and the local writes the server has
/// received.
///
/// Applied by `RecordStore.synchronize`, record by record, by one rule (last writer wins): a
/// server version replaces the local one when its stamp is later than the local one's; a local
/// write not yet sent that it replaces is kept in the conflict log first. A version with the
/// stamp the database already holds (its own write, come back) changes nothing.
package struct SyncRun: Sendable {
    /// One record's version on the server.
    package struct Change: Sendable {
        /// The record's key (`StorageKey`, for this database's key size).
        package var key: [UInt8]
        /// The record's id, when known (a deletion's may not be: it is then read from the
        /// database's row or record, or from the key itself when the key is not a digest).
        package var id: String?
        /// The version's stamp.
        package var stamp: SyncStamp
        /// The index of its record in `records`; nil for a deletion (a tombstone).
        package var record: Int?

        package init(key: [UInt8], id: String?, stamp: SyncStamp, record: Int?) {
            self.key = key
            self.id = id
            self.stamp = stamp
            self.record = record
        }
    }

    /// A local write the server has received (applied, or refused for a later one, which is
    /// then among `changes`): no longer pending, unless the record was written again since.
    package struct Acknowledged: Sendable {
        package var id: String
        package var time: UInt64

        package init(id: String, time: UInt64) {
            self.id = id
            self.time = time
        }
    }

    /// The device the database synchronizes as (checked against the recorded one).
    package var device: String
    /// The server's versions, at most one per id.
    package var changes: [Change] = []
    /// The records of `changes` that are not deletions, encoded for this database.
    package var records = RecordBatch()
    /// The server's class rows, recorded for names this database has no owner for.
    package var classes: [StoredClass] = []
    /// Local writes the server has received.
    package var acknowledged: [Acknowledged] = []
    /// The server position the database must be at for `position` to be recorded (nil: none yet).
    package var expected: String?
    /// The server position the changes bring the database to; nil to leave it as it is.
    package var position: String?

    package init(device: String) {
        self.device = device
    }
}

/// What the local side of synchronization reads in one snapshot: the device, the server position
/// reached, and local writes not yet sent, in the order they were made.
@usableFromInline package struct SyncPending: Sendable {
    /// One pending local write: the record's id, its stamp and base, and its stored value and
    /// class name (nil for a deletion).
    @usableFromInline package struct Write: Sendable {
        package var id: String
        package var stamp: SyncStamp
        package var base: SyncStamp
        /// The class name the record is stored under; nil for a deletion.
        package var className: String?
        /// The stored `RecordValue` bytes; nil for a deletion.
        package var value: [UInt8]?

        package init(id: String, stamp: SyncStamp, base: SyncStamp, className: String?, value: [UInt8]?) {
            self.id = id
            self.stamp = stamp
            self.base = base
            self.className = className
            self.value = value
        }
    }

    package var device: String?
    package var position: String?
    package var writes: [Write] = []
    /// The class rows of the classes `writes` store records under.
    package var classRows: [StoredClass] = []
    /// The pending writes in all (`writes` holds at most the limit asked for).
    package var total = 0
    /// The number of the last conflict recorded (0: none).
    package var lastConflict: UInt64 = 0

    package init() {}
}

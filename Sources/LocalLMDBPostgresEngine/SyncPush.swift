import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine
import PostgresNIO

/// Local writes a device sends in one server transaction (`PostgresEngine.pushSync`).
package struct SyncPush: Sendable {
    /// One write: the record's key and id, its stamp's time, the stamp of the version it replaced
    /// on the device (time 0: none), and its record in `records` (nil: a deletion).
    package struct Write: Sendable {
        package var key: [UInt8]
        package var id: String
        package var time: UInt64
        package var base: SyncStamp
        package var record: Int?

        package init(key: [UInt8], id: String, time: UInt64, base: SyncStamp, record: Int?) {
            self.key = key
            self.id = id
            self.time = time
            self.base = base
            self.record = record
        }
    }

    /// The device that made the writes.
    package var device: String
    /// The writes, each key once.
    package var writes: [Write] = []
    /// The records written, encoded for the server.
    package var records = RecordBatch()
    /// The class rows of the records' classes, recorded for names the server has no owner for.
    package var classRows: [StoredClass] = []

    package init(device: String) {
        self.device = device
    }
}

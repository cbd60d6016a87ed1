import LocalLMDBLMDB
import LocalLMDBStore
import PostgresNIO

/// Records to put, as the columns of `<prefix>_records` (bound as arrays): one row per key, the
/// last record of a key in the batches winning, as on LMDB.
struct RecordRows {
    private(set) var keys: [ByteBuffer] = []
    private(set) var classKeys: [ByteBuffer] = []
    private(set) var classNames: [ByteBuffer] = []
    private(set) var values: [ByteBuffer] = []
    private var rowOfKey: [[UInt8]: Int] = [:]

    /// Adds the records of `records`, telling `each` every record's key and class name in the
    /// batch's order (a key met again included).
    mutating func add(_ records: RecordBatch, _ each: (_ key: [UInt8], _ className: String) -> Void) {
        records.forEachRecord { (key: UnsafeRawBufferPointer, _: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, className: String, classKey: StorageKey) in
            let keyBytes = Array(key)
            each(keyBytes, className)
            let row = (ByteBuffer(bytes: keyBytes), ByteBuffer(bytes: classKey.bytes), ByteBuffer(string: className), ByteBuffer(bytes: value))
            if let index = rowOfKey[keyBytes] {
                (keys[index], classKeys[index], classNames[index], values[index]) = row
            } else {
                rowOfKey[keyBytes] = keys.count
                keys.append(row.0)
                classKeys.append(row.1)
                classNames.append(row.2)
                values.append(row.3)
            }
        }
        assert(keys.count == rowOfKey.count && classKeys.count == keys.count && classNames.count == keys.count && values.count == keys.count,
               "the rows' columns differ in length")
    }
}

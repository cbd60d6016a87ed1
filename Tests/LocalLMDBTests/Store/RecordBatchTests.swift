import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import Testing

/// `RecordBatch` keeps records' bytes in shared chunks: copies and merged batches must each
/// keep exactly their own records.
@Suite("Record batches")
struct RecordBatchTests {
    func add(_ batch: inout RecordBatch, _ id: String, _ type: String, _ value: String, maxKeySize: Int = 511) {
        let key = StorageKey(id, maxKeySize: maxKeySize)
        Array(value.utf8).withUnsafeBytes { value in
            batch.append(key: key, fullID: key.isHashed ? id : nil, className: type, maxKeySize: maxKeySize, value: value)
        }
    }

    func contents(_ batch: RecordBatch) -> [String] {
        batch.indices.map { index in
            batch.withRecord(at: index) { record in
                "\(String(decoding: record.id, as: UTF8.self)):\(batch.types[record.type].name):\(String(decoding: record.value, as: UTF8.self))"
            }
        }
    }

    @Test func copiesAndMergedBatchesKeepTheirOwnRecords() {
        var batch = RecordBatch()
        add(&batch, "a", "T", "1")
        add(&batch, "b", "U", "2")
        let copy = batch
        add(&batch, "c", "T", "3")
        var merged = RecordBatch()
        add(&merged, "z", "U", "0")
        merged.append(contentsOf: batch)
        add(&merged, "y", "T", "9")
        add(&batch, "d", "U", "4")  // Its last chunk is merged's too: it must not write into it.

        #expect(contents(copy) == ["a:T:1", "b:U:2"])
        #expect(contents(batch) == ["a:T:1", "b:U:2", "c:T:3", "d:U:4"])
        #expect(contents(merged) == ["z:U:0", "a:T:1", "b:U:2", "c:T:3", "y:T:9"])
        #expect(merged.types.map(\.name) == ["U", "T"])
        #expect(merged.valueBytes == 5 && merged.keyBytes == 5 && merged.classNameBytes == 5)
    }

    @Test func largeRecordsAndHashedIDsKeepEveryByte() {
        var batch = RecordBatch()
        let big = String(repeating: "v", count: RecordBatch.chunkSize + 17)  // Larger than a chunk.
        let longID = String(repeating: "id", count: 300)  // Over the key size: stored under a digest.
        add(&batch, "small", "T", "s")
        add(&batch, longID, "T", big)
        add(&batch, "after", "T", "t")
        #expect(contents(batch) == ["small:T:s", "\(longID):T:\(big)", "after:T:t"])
        batch.withRecord(at: 1) { record in
            #expect(record.key.first == StorageKey.hashMarker && record.key.count == 33)
            #expect(String(decoding: record.fullID, as: UTF8.self) == longID)
        }
    }
}

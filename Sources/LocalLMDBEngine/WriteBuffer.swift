import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore

/// Records written in a session's open transaction that were acknowledged but not yet applied:
/// they go to the writer thread together, as one put, ahead of the session's next operation
/// that goes there (see `Session.perform`).
///
/// Bounded, so a long transaction of small writes holds little memory outside LMDB: a write
/// that would take it past `maxRecords` or `maxBytes` sends it, with that write, at once.
package struct WriteBuffer: Sendable {
    private var records = RecordBatch()
    private var classes = ClassList()

    static let maxRecords = 4096
    static let maxBytes = 4 << 20

    /// Whether `more` records fit without sending the buffer.
    /// Whether nothing is buffered.
    var isEmpty: Bool { records.isEmpty }

    func hasRoom(for more: RecordBatch) -> Bool {
        records.count + more.count <= Self.maxRecords && records.valueBytes + more.valueBytes <= Self.maxBytes
    }

    mutating func append(_ more: RecordBatch, classes moreClasses: [StoredClass]) {
        records.append(contentsOf: more)
        classes.add(moreClasses)
    }

    /// The buffered records as one put, in the order they were written; nil when there are none.
    /// The buffer is empty afterwards.
    mutating func take() -> WriteOperation? {
        guard !records.isEmpty else { return nil }
        defer { self = WriteBuffer() }
        return .put(records, classes: classes.classes)
    }
}

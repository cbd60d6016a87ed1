/// Records written in a session's open transaction that were acknowledged but not yet applied:
/// they go to the writer thread together, as one put, ahead of the session's next operation
/// that goes there (see `Session.perform`).
///
/// Bounded, so a long transaction of small writes holds little memory outside LMDB: a write
/// that would take it past `maxRecords` or `maxBytes` sends it, with that write, at once.
struct WriteBuffer: Sendable {
    private var records: [RecordBytes] = []
    private var classes: [StoredClass] = []
    private var bytes = 0

    static let maxRecords = 4096
    static let maxBytes = 4 << 20

    /// Whether `more` records fit without sending the buffer.
    func hasRoom(for more: [RecordBytes]) -> Bool {
        records.count + more.count <= Self.maxRecords && bytes + more.reduce(0) { $0 + $1.value.count } <= Self.maxBytes
    }

    mutating func append(_ more: [RecordBytes], classes moreClasses: [StoredClass]) {
        records.append(contentsOf: more)
        bytes += more.reduce(0) { $0 + $1.value.count }
        for storedClass in moreClasses where !classes.contains(storedClass) { classes.append(storedClass) }
    }

    /// The buffered records as one put, in the order they were written; nil when there are none.
    /// The buffer is empty afterwards.
    mutating func take() -> WriteOperation? {
        guard !records.isEmpty else { return nil }
        defer { self = WriteBuffer() }
        return .put(records, classes: classes)
    }
}

/// What a transaction changed, gathered as its operations are applied, for the change log: one
/// entry per operation (a put of many records is one entry holding its records), so gathering
/// costs nothing per record; the log entry is written from it at the commit.
struct ChangeRecord: Sendable {
    enum Entry: Sendable {
        /// Records written, in order.
        case written(RecordBatch)
        /// Any other change.
        case change(Change)
    }

    private(set) var entries: [Entry] = []

    init() {}

    /// A record of `changes` (for tests and tools).
    init(_ changes: [Change]) {
        entries = changes.map(Entry.change)
    }

    var isEmpty: Bool { entries.isEmpty }

    mutating func append(written records: RecordBatch) {
        if !records.isEmpty { entries.append(.written(records)) }
    }

    mutating func append(_ change: Change) {
        entries.append(.change(change))
    }
}

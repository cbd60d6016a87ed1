import LocalLMDBLMDB
import LocalLMDBJSON

/// What a transaction changed, gathered as its operations are applied, for the change log: one
/// entry per operation (a put of many records is one entry holding its records), so gathering
/// costs nothing per record; the log entry is written from it at the commit.
package struct ChangeSet: Sendable {
    enum Entry: Sendable {
        /// Records written, in order.
        case written(RecordBatch)
        /// Any other change.
        case change(LoggedChange)
    }

    private(set) var entries: [Entry] = []

    package init() {}

    /// A record of `changes` (for tests and tools).
    init(_ changes: [LoggedChange]) {
        entries = changes.map(Entry.change)
    }

    package var isEmpty: Bool { entries.isEmpty }

    mutating func append(written records: RecordBatch) {
        if !records.isEmpty { entries.append(.written(records)) }
    }

    /// Appends every change of `other`, after this set's.
    package mutating func append(contentsOf other: ChangeSet) {
        entries += other.entries
    }

    /// Appends the writes of `records`, of which those at `left`'s indexes moved their id out of
    /// the class named there. Replayed in order, the log must give each class its true ids, so a
    /// class left is logged just before the write that left it, in the batch's order (a batch
    /// writing `x` as `A` then as `B` logs `written(x, A)`, `deleted(x, A)`, `written(x, B)`),
    /// never ahead of the whole batch. Records of one id are applied in the batch's order
    /// (`RecordStore.keyOrder` keeps it), so that order is the order they were applied in.
    /// Without class changes (the common case) the batch stays one entry.
    package mutating func append(written records: RecordBatch, leaving left: [(index: Int, className: String)]) {
        guard !left.isEmpty else { return append(written: records) }
        let leftAt = Dictionary(left.map { ($0.index, $0.className) }) { first, _ in first }
        assert(leftAt.count == left.count, "a record left a class twice")
        entries.reserveCapacity(entries.count + records.count + left.count)
        for index in records.indices {
            records.withRecord(at: index) { record in
                let id = String(decoding: record.id, as: UTF8.self)
                if let className = leftAt[index] { entries.append(.change(.deleted(id: id, className: className))) }
                entries.append(.change(.written(id: id, className: records.types[record.type].name)))
            }
        }
    }

    package mutating func append(_ change: LoggedChange) {
        entries.append(.change(change))
    }
}

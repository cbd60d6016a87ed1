/// What a transaction changed, gathered as its operations are applied, for the change log: one
/// entry per operation (a put of many records is one entry holding its records), so gathering
/// costs nothing per record; the log entry is written from it at the commit.
struct ChangeRecord: Sendable {
    enum Entry: Sendable {
        /// Records written, in order.
        case written([RecordBytes])
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

    mutating func append(written records: [RecordBytes]) {
        if !records.isEmpty { entries.append(.written(records)) }
    }

    mutating func append(_ change: Change) {
        entries.append(.change(change))
    }

    /// Every change, in order, one per record.
    var items: Items { Items(entries: entries) }

    /// One change, as the log encodes it.
    enum Item {
        /// A record written (kind 1) or deleted (kind 2).
        case record(kind: UInt8, id: String, className: String)
        case typeDeleted(className: String)
        case cleared

        init(_ change: Change) {
            switch change {
            case let .written(id, className): self = .record(kind: 1, id: id, className: className)
            case let .deleted(id, className): self = .record(kind: 2, id: id, className: className)
            case let .typeDeleted(className): self = .typeDeleted(className: className)
            case .cleared: self = .cleared
            }
        }
    }

    /// The changes of the entries, one per record, without copying them out.
    struct Items: Collection {
        struct Index: Comparable {
            let entry: Int
            let record: Int

            static func < (lhs: Index, rhs: Index) -> Bool {
                (lhs.entry, lhs.record) < (rhs.entry, rhs.record)
            }
        }

        let entries: [Entry]

        var startIndex: Index { Index(entry: 0, record: 0) }
        var endIndex: Index { Index(entry: entries.count, record: 0) }

        func index(after index: Index) -> Index {
            if case let .written(records) = entries[index.entry], index.record + 1 < records.count {
                return Index(entry: index.entry, record: index.record + 1)
            }
            return Index(entry: index.entry + 1, record: 0)
        }

        subscript(index: Index) -> Item {
            switch entries[index.entry] {
            case let .written(records):
                let record = records[index.record]
                return .record(kind: 1, id: record.key.id, className: record.typeName)
            case let .change(change):
                return Item(change)
            }
        }
    }
}

import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// The records of `T` a query selects, in its order.
struct ReadQuery<T: Persistable>: SessionRead {
    let query: IndexQuery
    /// What is left to do on the decoded models (`PlannedQuery`).
    var filter: ModelFilter<T>?

    init(_ planned: PlannedQuery<T>) {
        query = planned.index
        filter = planned.filter
    }

    /// The records read in the session's transaction, and with a filter the position of each.
    typealias Detached = (records: DetachedRecords, positions: [IndexCursor])

    func inTransaction<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> Detached {
        try checkOwner(ObjectIdentifier(T.self), snapshot.classes)
        guard filter != nil else {
            return (try DetachedRecords(snapshot.records(matching: query) { stored, id in (stored, id()) }, in: snapshot.classes), [])
        }
        // Every candidate: the filter runs on the caller's thread, where the models are made.
        let candidates = try snapshot.positionedRecords(matching: query) { stored, id in (stored, id()) }
        return (try DetachedRecords(candidates.map(\.record), in: snapshot.classes), candidates.map(\.position))
    }

    func restore(_ detached: Detached, classes: ClassLookup) throws(DatabaseError) -> [T] {
        guard let filter else { return try ReadAll<T>.restoreAll(detached.records, classes: classes) }
        return try Self.select(filter, from: detached, classes: classes, keepsIDs: false).results.map(\.model)
    }

    /// The results `filter` keeps of candidates read in a transaction, made on this thread.
    static func select(
        _ filter: ModelFilter<T>, from detached: Detached, classes: ClassLookup, keepsIDs: Bool
    ) throws(DatabaseError) -> (results: [FilterSelection<T>.Result], last: IndexCursor?) {
        let scratch = ReadScratch.current
        return try scratch.reading(in: classes, prefetched: detached.records.referenced, records: ObjectIdentifier(T.self)) { () throws(DatabaseError) in
            var selection = FilterSelection(filter, keepsIDs: keepsIDs)
            for ((object, id), position) in zip(detached.records.records, detached.positions) {
                guard selection.wantsMore else { break }
                let model = try scratch.restore(T.self, from: object.stored.object, id: id, storedName: object.stored.className)
                if try selection.accepts(model, id: { id }) { selection.take(model, id: id, position: position) }
            }
            return selection.finished()
        }
    }

    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> [T] {
        try models(in: snapshot).records
    }

    /// The models of the records the query selects, restored in place in `snapshot`, and the
    /// position after the last; `visit` sees each record first (its stored object and id): the
    /// one body of every read of a query's models.
    ///
    /// `startOver` is called when the read starts over (see `ReadScratch.reading`): `visit` then
    /// sees the records again.
    func models<Snapshot: RecordSnapshot>(
        in snapshot: Snapshot, visit: ((DecodedRecord, _ id: String) -> Void)? = nil, startOver: () -> Void = {}
    ) throws(DatabaseError) -> (records: [T], last: IndexCursor?) {
        if let filter {
            let (results, last) = try selected(filter, in: snapshot, keepsIDs: false, visit: visit, startOver: startOver)
            return (results.map(\.model), last)
        }
        try checkOwner(ObjectIdentifier(T.self), snapshot.classes)
        let scratch = ReadScratch.current
        return try scratch.reading(in: snapshot.classes, records: ObjectIdentifier(T.self), startOver: startOver) { () throws(DatabaseError) in
            try snapshot.page(matching: query) { stored, id throws(DatabaseError) in
                visit?(stored, id())
                return try scratch.restore(T.self, from: stored.object, id: id(), storedName: stored.className)
            }
        }
    }

    /// The results `filter` keeps of the candidates, decoded in place in `snapshot` and read in
    /// chunks while more can be results (`ModelFilter.firstChunk`); `visit` sees each accepted one.
    func selected<Snapshot: RecordSnapshot>(
        _ filter: ModelFilter<T>, in snapshot: Snapshot, keepsIDs: Bool,
        visit: ((DecodedRecord, _ id: String) -> Void)? = nil, startOver: () -> Void = {}
    ) throws(DatabaseError) -> (results: [FilterSelection<T>.Result], last: IndexCursor?) {
        try checkOwner(ObjectIdentifier(T.self), snapshot.classes)
        let scratch = ReadScratch.current
        return try scratch.reading(in: snapshot.classes, records: ObjectIdentifier(T.self), startOver: startOver) { () throws(DatabaseError) in
            var selection = FilterSelection(filter, keepsIDs: keepsIDs)
            if query.definition.fields.isEmpty, query.after == nil, query.classNames.count == 1, !selection.needsPositions {
                // Every record of one class, by id, and no position wanted: read in one pass,
                // as `read()` reads (the store's query would sort their keys, then look each up).
                let classKeys = query.classNames.map { StorageKey($0, maxKeySize: snapshot.maxKeySize) }
                let accepted = try snapshot.records(ofClasses: classKeys) { stored, id throws(DatabaseError) -> (model: T, id: String?)? in
                    let model = try scratch.restore(T.self, from: stored.object, id: id(), storedName: stored.className)
                    guard try selection.accepts(model, id: id) else { return nil }
                    visit?(stored, id())
                    return (model, selection.keepsIDs ? id() : nil)
                }
                for candidate in accepted {
                    if let candidate { selection.take(candidate.model, id: candidate.id, position: nil) }
                }
                return selection.finished()
            }
            var chunk = query
            chunk.limit = filter.firstChunk
            while true {
                let candidates = try snapshot.positionedRecords(matching: chunk) { stored, id throws(DatabaseError) -> (model: T, id: String?)? in
                    guard selection.wantsMore else { return nil }
                    let model = try scratch.restore(T.self, from: stored.object, id: id(), storedName: stored.className)
                    guard try selection.accepts(model, id: id) else { return nil }
                    visit?(stored, id())
                    return (model, selection.keepsIDs ? id() : nil)
                }
                for (candidate, position) in candidates {
                    if let candidate { selection.take(candidate.model, id: candidate.id, position: position) }
                }
                guard let size = chunk.limit, candidates.count >= size, selection.wantsMore, let last = candidates.last else { break }
                // The next chunk, after this one's last candidate; larger, up to 64 Ki.
                chunk.after = last.position
                chunk.limit = Swift.min(size * 4, 65_536)
            }
            return selection.finished()
        }
    }
}

/// The ids of the records of `T` a query with a filter selects: the models are decoded, for
/// the filter.
struct FilteredIDs<T: Persistable>: SessionRead {
    let read: ReadQuery<T>
    let filter: ModelFilter<T>

    func inTransaction<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> ReadQuery<T>.Detached {
        try read.inTransaction(snapshot)
    }

    func restore(_ detached: ReadQuery<T>.Detached, classes: ClassLookup) throws(DatabaseError) -> [String] {
        try ReadQuery<T>.select(filter, from: detached, classes: classes, keepsIDs: true).results.compactMap(\.id)
    }

    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> [String] {
        try read.selected(filter, in: snapshot, keepsIDs: true).results.compactMap(\.id)
    }
}

/// The number of records of `T` a query with a filter selects: the models are decoded, for
/// the filter.
struct FilteredCount<T: Persistable>: SessionRead {
    let read: ReadQuery<T>
    let filter: ModelFilter<T>

    func inTransaction<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> ReadQuery<T>.Detached {
        try read.inTransaction(snapshot)
    }

    func restore(_ detached: ReadQuery<T>.Detached, classes: ClassLookup) throws(DatabaseError) -> Int {
        try ReadQuery<T>.select(filter, from: detached, classes: classes, keepsIDs: false).results.count
    }

    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> Int {
        try read.selected(filter, in: snapshot, keepsIDs: false).results.count
    }
}

/// The ids of the records a query selects, in its order.
struct ReadQueryIDs: PlainRead {
    let type: ObjectIdentifier
    let query: IndexQuery

    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> [String] {
        try checkOwner(type, snapshot.classes)
        return try snapshot.ids(matching: query)
    }
}

/// The number of records a query selects, without reading them.
struct CountQuery: PlainRead {
    let type: ObjectIdentifier
    let query: IndexQuery

    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> Int {
        try checkOwner(type, snapshot.classes)
        return try snapshot.count(matching: query)
    }
}

/// One page of the records of `T` a query selects, and the position after its last.
struct ReadQueryPage<T: Persistable>: SessionRead {
    /// The query's read, whose models the page holds.
    let read: ReadQuery<T>
    var query: IndexQuery { read.query }
    var filter: ModelFilter<T>? { read.filter }

    init(_ planned: PlannedQuery<T>) {
        read = ReadQuery(planned)
    }

    /// The page's limit: the filter's when it applies the page.
    private var limit: Int? { filter.map(\.limit) ?? query.limit }

    func inTransaction<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> (records: ReadQuery<T>.Detached, last: IndexCursor?) {
        if filter != nil { return (try read.inTransaction(snapshot), nil) }
        try checkOwner(ObjectIdentifier(T.self), snapshot.classes)
        let (records, last) = try snapshot.page(matching: query) { stored, id in (stored, id()) }
        return ((try DetachedRecords(records, in: snapshot.classes), []), last)
    }

    func restore(_ detached: (records: ReadQuery<T>.Detached, last: IndexCursor?), classes: ClassLookup) throws(DatabaseError) -> QueryPage<T> {
        if let filter {
            let (results, last) = try ReadQuery<T>.select(filter, from: detached.records, classes: classes, keepsIDs: false)
            return page(results.map(\.model), last)
        }
        let records = try ReadAll<T>.restoreAll(detached.records.records, classes: classes)
        return page(records, detached.last)
    }

    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> QueryPage<T> {
        let (records, last) = try read.models(in: snapshot)
        return page(records, last)
    }

    /// A page is the last when it is short of the limit.
    private func page(_ records: [T], _ last: IndexCursor?) -> QueryPage<T> {
        let isLast = limit.map { records.count < $0 } ?? true
        return QueryPage(records: records, next: isLast ? nil : last.map(QueryCursor.init))
    }
}

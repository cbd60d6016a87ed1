import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// The records of `T` a query selects, in its order.
struct ReadQuery<T: Persistable>: SessionRead {
    let query: IndexQuery

    func inTransaction<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> DetachedRecords {
        try checkOwner(ObjectIdentifier(T.self), snapshot.classes)
        return try DetachedRecords(snapshot.records(matching: query) { stored, id in (stored, id()) }, in: snapshot.classes)
    }

    func restore(_ detached: DetachedRecords, classes: ClassLookup) throws(DatabaseError) -> [T] {
        try ReadAll<T>.restoreAll(detached, classes: classes)
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
        try checkOwner(ObjectIdentifier(T.self), snapshot.classes)
        let scratch = ReadScratch.current
        return try scratch.reading(in: snapshot.classes, records: ObjectIdentifier(T.self), startOver: startOver) { () throws(DatabaseError) in
            try snapshot.page(matching: query) { stored, id throws(DatabaseError) in
                visit?(stored, id())
                return try scratch.restore(T.self, from: stored.object, id: id(), storedName: stored.className)
            }
        }
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
    let query: IndexQuery

    func inTransaction<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> (records: DetachedRecords, last: IndexCursor?) {
        try checkOwner(ObjectIdentifier(T.self), snapshot.classes)
        let (records, last) = try snapshot.page(matching: query) { stored, id in (stored, id()) }
        return (try DetachedRecords(records, in: snapshot.classes), last)
    }

    func restore(_ detached: (records: DetachedRecords, last: IndexCursor?), classes: ClassLookup) throws(DatabaseError) -> QueryPage<T> {
        let records = try ReadAll<T>.restoreAll(detached.records, classes: classes)
        return page(records, detached.last)
    }

    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> QueryPage<T> {
        let (records, last) = try ReadQuery<T>(query: query).models(in: snapshot)
        return page(records, last)
    }

    /// A page is the last when it is short of the limit.
    private func page(_ records: [T], _ last: IndexCursor?) -> QueryPage<T> {
        let isLast = query.limit.map { records.count < $0 } ?? true
        return QueryPage(records: records, next: isLast ? nil : last.map(QueryCursor.init))
    }
}

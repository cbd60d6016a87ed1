import LocalLMDBLMDB
import LocalLMDBStore
import LocalLMDBEngine

extension SerializationDatabase {
    /// The records `query` selects, in its order (see `LocalDatabase.read(_:)`); `[]` on
    /// failure (`lastError` says why).
    public func read<T: Persistable>(_ query: Query<T>) -> [T] {
        run([]) { engine throws(DatabaseError) in
            let plan = try QueryPlan.plan(query)
            try IndexDeclarations.ensureBlocking(T.self, in: engine, "read")
            return try engine.readBlocking(ReadQuery<T>(plan), "read")
        }
    }

    /// The first record `query` selects; nil when none does, or on failure.
    public func first<T: Persistable>(_ query: Query<T>) -> T? {
        read(query.firstResult).first
    }

    /// The ids of the records `query` selects, in its order; `[]` on failure.
    public func readIDs<T: Persistable>(_ query: Query<T>) -> [String] {
        run([]) { engine throws(DatabaseError) in
            let plan = try QueryPlan.plan(query)
            try IndexDeclarations.ensureBlocking(T.self, in: engine, "readIDs")
            if let filter = plan.filter { return try engine.readBlocking(FilteredIDs(read: ReadQuery(plan), filter: filter), "readIDs") }
            return try engine.readBlocking(ReadQueryIDs(type: ObjectIdentifier(T.self), query: plan.index), "readIDs")
        }
    }

    /// The number of records `query` selects, without decoding them; 0 on failure.
    public func count<T: Persistable>(_ query: Query<T>) -> Int {
        run(0) { engine throws(DatabaseError) in
            let plan = try QueryPlan.plan(query)
            try IndexDeclarations.ensureBlocking(T.self, in: engine, "count")
            if let filter = plan.filter { return try engine.readBlocking(FilteredCount(read: ReadQuery(plan), filter: filter), "count") }
            return try engine.readBlocking(CountQuery(type: ObjectIdentifier(T.self), query: plan.index), "count")
        }
    }

    /// Whether `query` selects any record (false on failure).
    public func exists<T: Persistable>(_ query: Query<T>) -> Bool {
        count(query.firstResult) > 0
    }
}

extension SerializationDatabase {
    /// One page of the records `query` selects (see `LocalDatabase.readPage(_:)`); an empty last
    /// page on failure (`lastError` says why).
    public func readPage<T: Persistable>(_ query: Query<T>) -> QueryPage<T> {
        run(QueryPage(records: [], next: nil)) { engine throws(DatabaseError) in
            let plan = try QueryPlan.plan(query.limit == nil ? query.limit(100) : query, paged: true)
            try IndexDeclarations.ensureBlocking(T.self, in: engine, "readPage")
            return try engine.readBlocking(ReadQueryPage<T>(plan), "readPage")
        }
    }

    /// The records `query` selects, read `batchSize` at a time (see `LocalDatabase.stream(_:batchSize:)`).
    public func stream<T: Persistable>(_ query: Query<T>, batchSize: Int = 256) -> QueryStream<T> {
        QueryStream(engine: opened, query: query, batchSize: batchSize)
    }
}

extension SerializationDatabase {
    /// Removes the stored index `index` of `T` and its entries (see `LocalDatabase.dropIndex(_:of:)`);
    /// false when there was none, or on failure.
    @discardableResult
    public func dropIndex<T: Persistable>(_ index: Index, of type: T.Type) -> Bool {
        run(false) { engine throws(DatabaseError) in
            try IndexDeclarations.dropBlocking(IndexDeclarations.Dropping(index, of: type), in: engine)
        }
    }
}

import LocalLMDBLMDB
import LocalLMDBStore
import LocalLMDBEngine

extension LocalDatabase {
    /// The records `query` selects, in its order, after its offset, at most its limit.
    ///
    /// The first query or write of a type that declares indexes stores them in the database
    /// (building them from the records there). Reads one consistent snapshot (inside this
    /// database's transaction when one is open).
    /// - Throws: `LocalDatabaseError.invalidQuery` when no index order can serve the query;
    ///   `.uniqueIndexViolation` when a unique index being stored finds two records with one
    ///   value; as `read()` otherwise.
    public nonisolated(nonsending) func read<T: Persistable>(_ query: Query<T>) async throws -> [T] {
        do throws(DatabaseError) {
            let plan = try QueryPlan.plan(query)
            try await IndexDeclarations.ensure(T.self, in: engine)
            return try await engine.read(ReadQuery<T>(plan))
        } catch { throw LocalDatabaseError(error) }
    }

    /// The first record `query` selects; nil when none does.
    public nonisolated(nonsending) func first<T: Persistable>(_ query: Query<T>) async throws -> T? {
        try await read(query.firstResult).first
    }

    /// The ids of the records `query` selects, in its order.
    public nonisolated(nonsending) func readIDs<T: Persistable>(_ query: Query<T>) async throws -> [String] {
        do throws(DatabaseError) {
            let plan = try QueryPlan.plan(query)
            try await IndexDeclarations.ensure(T.self, in: engine)
            if let filter = plan.filter { return try await engine.read(FilteredIDs(read: ReadQuery(plan), filter: filter)) }
            return try await engine.read(ReadQueryIDs(type: ObjectIdentifier(T.self), query: plan.index))
        } catch { throw LocalDatabaseError(error) }
    }

    /// The number of records `query` selects (its offset and limit applied), read from the
    /// index without decoding them (unless a predicate is evaluated on the models).
    public nonisolated(nonsending) func count<T: Persistable>(_ query: Query<T>) async throws -> Int {
        do throws(DatabaseError) {
            let plan = try QueryPlan.plan(query)
            try await IndexDeclarations.ensure(T.self, in: engine)
            if let filter = plan.filter { return try await engine.read(FilteredCount(read: ReadQuery(plan), filter: filter)) }
            return try await engine.read(CountQuery(type: ObjectIdentifier(T.self), query: plan.index))
        } catch { throw LocalDatabaseError(error) }
    }

    /// Whether `query` selects any record.
    public nonisolated(nonsending) func exists<T: Persistable>(_ query: Query<T>) async throws -> Bool {
        try await count(query.firstResult) > 0
    }
}

extension LocalDatabase {
    /// One page of the records `query` selects — at most its limit (100 when it has none) — and
    /// the position to continue after (`QueryPage.next`, for `Query.after(_:)`).
    public nonisolated(nonsending) func readPage<T: Persistable>(_ query: Query<T>) async throws -> QueryPage<T> {
        do throws(DatabaseError) {
            let plan = try QueryPlan.plan(query.limit == nil ? query.limit(100) : query, paged: true)
            try await IndexDeclarations.ensure(T.self, in: engine)
            return try await engine.read(ReadQueryPage<T>(plan))
        } catch { throw LocalDatabaseError(error) }
    }

    /// The records `query` selects, read `batchSize` at a time, each batch in its own snapshot
    /// (see `QueryStream`).
    ///
    /// ```swift
    /// for try await order in database.stream(Query(Order.self).sorted(by: "date")) { export(order) }
    /// ```
    public nonisolated func stream<T: Persistable>(_ query: Query<T>, batchSize: Int = 256) -> QueryStream<T> {
        QueryStream(engine: .success(engine), query: query, batchSize: batchSize)
    }
}

extension LocalDatabase {
    /// Removes the stored index `index` of `T` and its entries (under `T`'s current and legacy
    /// class names): the way to retire an index, such as a unique one, that `T` no longer
    /// declares. An index `T` still declares is stored again, and built, at its next write or
    /// query. Readers are not blocked; writers wait for the transaction.
    /// - Returns: Whether there was such an index.
    @discardableResult
    public nonisolated(nonsending) func dropIndex<T: Persistable>(_ index: Index, of type: T.Type) async throws -> Bool {
        do throws(DatabaseError) {
            return try await IndexDeclarations.drop(IndexDeclarations.Dropping(index, of: type), in: engine)
        } catch { throw LocalDatabaseError(error) }
    }
}

/// How far the build of an index has come (`LocalDatabase.prepareIndexes(of:progress:)`).
public struct IndexBuildProgress: Sendable, Hashable {
    /// The index being built (its fields and options, as `Index.description`).
    public let index: String
    /// The class name whose records it indexes.
    public let className: String
    /// The records indexed so far.
    public let recordsIndexed: Int
    /// The records to index.
    public let recordCount: Int

    /// From 0 to 1.
    public var fractionCompleted: Double { recordCount == 0 ? 1 : Double(recordsIndexed) / Double(recordCount) }
}

extension LocalDatabase {
    /// Stores the indexes `T` declares and builds each new one now, from the records stored,
    /// telling `progress` as it goes (every 4,096 records, and at the end): what the first write
    /// or query of `T` otherwise does without telling. An index already stored is left as it is.
    ///
    /// The build is one write transaction: readers are not blocked and see the index once it is
    /// complete; writers wait for it; queries of `T` made meanwhile wait too (they never see a
    /// partial index). `progress` is called on the database's writer thread, while the build
    /// holds it: keep it short, and do not call the database from it.
    public nonisolated(nonsending) func prepareIndexes<T: Persistable>(
        of type: T.Type, progress: @escaping @Sendable (IndexBuildProgress) -> Void
    ) async throws {
        do throws(DatabaseError) {
            try await IndexDeclarations.prepare(type, in: engine) { className, index, indexed, total in
                progress(IndexBuildProgress(index: index, className: className, recordsIndexed: indexed, recordCount: total))
            }
        } catch { throw LocalDatabaseError(error) }
    }
}

import LocalLMDBLMDB
import LocalLMDBStore
import LocalLMDBEngine

/// The records a query selects, as an `AsyncSequence` read in batches (`LocalDatabase.stream(_:batchSize:)`):
/// a million results never become one array.
///
/// Each batch is read in its own snapshot, continuing after the last record of the one before
/// (keyset paging, `Query.after(_:)`): records written meanwhile are seen if they come later in
/// the order, and no record is given twice or skipped because others were added or removed.
/// Models are decoded in the isolation of the task that iterates, so they need not be `Sendable`.
public struct QueryStream<T: Persistable>: AsyncSequence, Sendable {
    public typealias Element = T
    public typealias Failure = LocalDatabaseError

    let engine: Result<FaceEngine, DatabaseError>
    let query: Query<T>
    let batchSize: Int

    public func makeAsyncIterator() -> Iterator {
        Iterator(engine: engine, query: query, batchSize: batchSize)
    }

    /// Reads the next batch when the last one is used up.
    public struct Iterator: AsyncIteratorProtocol {
        public typealias Element = T
        public typealias Failure = LocalDatabaseError

        private let engine: Result<FaceEngine, DatabaseError>
        private var query: Query<T>
        /// Records not given yet, last first.
        private var batch: [T] = []
        /// The records the query's limit still allows; nil for no limit.
        private var remaining: Int?
        private let batchSize: Int
        private var finished = false

        init(engine: Result<FaceEngine, DatabaseError>, query: Query<T>, batchSize: Int) {
            self.engine = engine
            self.query = query
            remaining = query.limit
            self.batchSize = Swift.max(1, batchSize)
        }

        /// The next record; nil after the last, or once the task is cancelled (the records of the
        /// batch already read are given first: no batch is read after the cancellation).
        public mutating func next(isolation actor: isolated (any Actor)? = #isolation) async throws(LocalDatabaseError) -> T? {
            do throws(DatabaseError) {
                return try await following()
            } catch { throw LocalDatabaseError(error) }
        }

        public mutating func next() async throws(LocalDatabaseError) -> T? {
            try await next(isolation: nil)
        }

        private nonisolated(nonsending) mutating func following() async throws(DatabaseError) -> T? {
            if let record = batch.popLast() { return record }
            guard !finished, !Task.isCancelled, remaining.map({ $0 > 0 }) ?? true else { return nil }
            let engine = try engine.get()
            let size = Swift.min(batchSize, remaining ?? .max)
            let plan = try QueryPlan.plan(query.limit(size))
            try await IndexDeclarations.ensure(T.self, in: engine)
            if let filter = plan.filter, !filter.sort.isEmpty {
                // An order sorted in memory: every result at once, in one snapshot (no cursor
                // can continue it).
                finished = true
                var whole = query
                whole.limit = remaining
                batch = try await engine.read(ReadQuery<T>(try QueryPlan.plan(whole))).reversed()
                return batch.popLast()
            }
            let page = try await engine.read(ReadQueryPage<T>(plan))
            // Later batches continue after this one: the offset is spent.
            query = query.offset(0).after(page.next)
            if page.next == nil { finished = true }
            remaining = remaining.map { $0 - page.records.count }
            batch = page.records.reversed()
            return batch.popLast()
        }
    }
}

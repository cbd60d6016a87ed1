import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import Foundation

// Reads: in a snapshot on the caller's thread, or in the session's open transaction.
extension Session {
    /// Whether a read must go through this session's open transaction (`readInTransaction`);
    /// when not, it runs in a `snapshot` on the calling thread.
    ///
    /// Reads go through `readOutsideTransaction(_:)`, `readRecord` or `readBlocking`, which ask here.
    @usableFromInline
    func readsInTransaction() throws(DatabaseError) -> Bool {
        try checkOpen()
    }

    /// `readsInTransaction`, for a blocking read: also fails fast when the read would wait for
    /// itself (see `Session`).
    @usableFromInline
    func readsInTransactionBlocking(_ name: String) throws(DatabaseError) -> Bool {
        let inTransaction = try checkOpen()
        try checkNotRestoring(name)
        return inTransaction
    }

    /// Runs `body` in a read-only snapshot on the calling thread.
    @inlinable @inline(__always)
    func snapshot<R>(_ body: (Transaction) throws(DatabaseError) -> R) throws(DatabaseError) -> R {
        try Environment.withReadTransaction(in: engine.unmanagedEnvironment, body)
    }

    /// The store as `transaction` shows it.
    @inlinable @inline(__always)
    func storeSnapshot(_ transaction: Transaction) -> StoreSnapshot {
        StoreSnapshot(engine.store, database: engine.serial, in: transaction)
    }

    /// Where objects restored after their snapshot ended look up their classes: a fresh snapshot.
    @inlinable
    var freshClassLookup: ClassLookup {
        let target = engine.readTarget
        return ClassLookup(database: target.serial, table: target.classTable, transaction: nil, records: target.records, encryption: target.encryption)
    }

    @inlinable @inline(__always)
    package func readsSnapshotOnCallersThread() throws(DatabaseError) -> Bool {
        try !readsInTransaction()
    }

    @inlinable @inline(__always)
    package func readRecord<Value>(
        _ key: StorageKey, id: String, _ restore: (DecodedRecord?, ClassLookup) throws(DatabaseError) -> Value
    ) throws(DatabaseError) -> Value {
        // The engine's plain values, not the store: a copy of the store retains its environment,
        // a reference count every reading thread would write.
        let target = engine.readTarget
        return try snapshot { transaction throws(DatabaseError) in
            let classes = ClassLookup(
                database: target.serial, table: target.classTable, transaction: transaction, records: target.records, encryption: target.encryption)
            // No `Optional.map` here: a generic call would look up `DecodedRecord?`'s metadata per read.
            guard let value = try RecordStore.value(key, records: target.records, in: transaction) else {
                return try restore(nil, classes)
            }
            return try restore(try RecordDecoding.decode(value: value, id: id, encryption: target.encryption), classes)
        }
    }

    /// `read`'s value from a snapshot on the calling thread, where a read runs when this session
    /// has no transaction open; nil when it has one: `readInTransaction` runs it there, behind
    /// the transaction's writes. The asynchronous face calls this first (synchronous, so it
    /// costs no asynchronous call on the hot path), after `PoolDemand.giveWay()`.
    @inlinable @inline(__always)
    package func readOutsideTransaction<Read: SessionRead>(_ read: Read) throws(DatabaseError) -> Read.Value? {
        if try readsInTransaction() { return nil }
        return try snapshot { transaction throws(DatabaseError) in try read.snapshot(storeSnapshot(transaction)) }
    }

    /// `read`, blocking the calling thread; `name` is the calling method's, for errors.
    @inlinable
    package func readBlocking<Read: SessionRead>(_ read: Read, _ name: String) throws(DatabaseError) -> Read.Value {
        if try readsInTransactionBlocking(name) { return try readInTransactionBlocking(read, name) }
        return try snapshot { transaction throws(DatabaseError) in try read.snapshot(storeSnapshot(transaction)) }
    }

    /// Runs `read` in this session's open transaction, or in a snapshot if it has none by now.
    @usableFromInline
    package nonisolated(nonsending) func readInTransaction<Read: SessionRead>(_ read: Read) async throws(DatabaseError) -> Read.Value {
        if let detached = try await onWriterThread({ state throws(DatabaseError) in try self.readingInTransaction(read, &state) }) {
            return try read.restore(detached, classes: freshClassLookup)
        }
        return try snapshot { transaction throws(DatabaseError) in try read.snapshot(storeSnapshot(transaction)) }
    }

    /// `readInTransaction`, blocking the calling thread.
    @usableFromInline
    func readInTransactionBlocking<Read: SessionRead>(_ read: Read, _ name: String) throws(DatabaseError) -> Read.Value {
        if let detached = try blockingOnWriterThread(name, { state throws(DatabaseError) in try self.readingInTransaction(read, &state) }) {
            return try read.restore(detached, classes: freshClassLookup)
        }
        return try snapshot { transaction throws(DatabaseError) in try read.snapshot(storeSnapshot(transaction)) }
    }

    /// The job reading in the transaction, after the buffered records are applied: the read sees
    /// every write made before it.
    private func readingInTransaction<Read: SessionRead>(_ read: Read, _ state: inout State) throws(DatabaseError) -> WriterJob<Read.Detached?> {
        guard !state.closed else { throw .closed }
        let (owner, generation) = (owner, state.generation)
        let buffered = state.buffer.take()
        return { [self] coordinator, done in
            done(Result { () throws(DatabaseError) in
                try applyBuffered(buffered, coordinator, generation: generation)
                return try coordinator.readInTransaction(owner: owner) { transaction throws(DatabaseError) in
                    try read.inTransaction(storeSnapshot(transaction))
                }
            })
        }
    }
}

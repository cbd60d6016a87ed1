/// An LMDB write transaction, from `Environment.beginWrite` to its end.
///
/// Non-copyable, so it is ended exactly once: by `commit()` or `abort()`, or, if it is dropped
/// without either (an error path that forgot it), by its `deinit`, which aborts it. Either way
/// the environment's resize lock is released: a leaked lock would later block every map growth.
/// Not `Sendable`: LMDB's writer lock is a mutex owned by the thread that began the transaction,
/// so the transaction stays on that thread (`Transaction` checks each write).
struct WriteTransaction: ~Copyable {
    /// The transaction, for operations inside it; valid until this value is consumed.
    let transaction: Transaction
    private unowned(unsafe) let environment: Environment

    init(_ transaction: Transaction, in environment: Environment) {
        self.transaction = transaction
        self.environment = environment
    }

    /// Commits. The transaction is over, committed or not.
    consuming func commit() throws(LocalDatabaseError) {
        let (transaction, environment) = (transaction, environment)
        discard self
        try environment.commitWrite(transaction)
    }

    /// Aborts: none of the transaction's changes are kept.
    consuming func abort() {
        let (transaction, environment) = (transaction, environment)
        discard self
        environment.abortWrite(transaction)
    }

    deinit {
        environment.abortWrite(transaction)
    }
}

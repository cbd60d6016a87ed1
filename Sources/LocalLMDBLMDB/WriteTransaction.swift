/// An LMDB write transaction, from `Environment.beginWrite` to its end.
///
/// Non-copyable, so it is ended exactly once: by `commit()` or `abort()`, or, if it is dropped
/// without either (an error path that forgot it), by its `deinit`, which aborts it. Either way
/// the transaction leaves the environment's gate: one left inside would block every map growth.
/// Not `Sendable`: LMDB's writer lock is a mutex owned by the thread that began the transaction,
/// so the transaction stays on that thread (`Transaction` checks each write).
package struct WriteTransaction: ~Copyable {
    /// The transaction, for operations inside it; valid until this value is consumed.
    package let transaction: Transaction
    private unowned(unsafe) let environment: Environment
    /// Where the transaction is counted in the environment's gate.
    private let ticket: TransactionGate.Ticket

    init(_ transaction: Transaction, ticket: TransactionGate.Ticket, in environment: Environment) {
        self.transaction = transaction
        self.ticket = ticket
        self.environment = environment
    }

    /// Commits. The transaction is over, committed or not.
    package consuming func commit() throws(DatabaseError) {
        let (transaction, environment, ticket) = (transaction, environment, ticket)
        discard self
        try environment.commitWrite(transaction, ticket)
    }

    /// Aborts: none of the transaction's changes are kept.
    package consuming func abort() {
        let (transaction, environment, ticket) = (transaction, environment, ticket)
        discard self
        environment.abortWrite(transaction, ticket)
    }

    deinit {
        environment.abortWrite(transaction, ticket)
    }
}

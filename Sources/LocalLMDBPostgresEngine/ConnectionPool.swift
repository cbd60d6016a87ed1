import LocalLMDBLMDB
import LocalLMDBStore
import PostgresNIO

/// The engine's connections to the server: opened on demand up to `limit`, lent one at a time
/// (`lease`) and given back (`release`), on SwiftNIO's event loops.
///
/// Driven by futures, never by tasks: a lease is answered, and a waiting lease is handed a
/// released connection, from whichever thread releases it (an event loop, or a caller's), so
/// the pool never needs a free thread of Swift's cooperative pool to make progress.
///
/// Invariants (kept under `lock`, checked in debug builds): `idle.count + lent == open` minus
/// the connections being opened; a waiter exists only while no connection is idle and `open`
/// is at `limit`.
final class ConnectionPool: @unchecked Sendable {
    private struct Waiter {
        let id: UInt64
        let promise: EventLoopPromise<PostgresConnection>
    }

    private struct State {
        var idle: [PostgresConnection] = []
        /// Connections open or being opened.
        var open = 0
        var waiters: [Waiter] = []
        var nextWaiter: UInt64 = 0
        var nextConnectionID = 1
        var closed = false
    }

    let configuration: PostgresConnection.Configuration
    let limit: Int
    let waitLimit: Duration
    let logger: Logger
    let eventLoopGroup: any EventLoopGroup
    private let state = Locked(State())

    init(configuration: PostgresConnection.Configuration, limit: Int, waitLimit: Duration, logger: Logger, eventLoopGroup: any EventLoopGroup) {
        self.configuration = configuration
        self.limit = max(1, limit)
        self.waitLimit = waitLimit
        self.logger = logger
        self.eventLoopGroup = eventLoopGroup
    }

    /// An idle connection for the caller alone, until it gives it back with `release`; nil when
    /// none is idle (then `lease`). Answers at once, with no hop through a future.
    func leaseIdle() -> PostgresConnection? {
        state.withLock { state in
            guard !state.closed else { return nil }
            while let connection = state.idle.popLast() {
                if !connection.isClosed { return connection }
                state.open -= 1
            }
            return nil
        }
    }

    /// A connection for the caller alone, until it gives it back with `release`: an idle one, a
    /// new one, or the next one released (waiting at most `waitLimit`, then failing with `busy`).
    func lease() -> EventLoopFuture<PostgresConnection> {
        let eventLoop = eventLoopGroup.any()
        enum Next { case ready(PostgresConnection), open(Int), wait(EventLoopPromise<PostgresConnection>, UInt64), closed }
        let next: Next = state.withLock { state in
            if state.closed { return .closed }
            while let connection = state.idle.popLast() {
                if !connection.isClosed { return .ready(connection) }
                state.open -= 1
            }
            if state.open < limit {
                state.open += 1
                state.nextConnectionID += 1
                return .open(state.nextConnectionID)
            }
            let promise = eventLoop.makePromise(of: PostgresConnection.self)
            state.nextWaiter += 1
            state.waiters.append(Waiter(id: state.nextWaiter, promise: promise))
            return .wait(promise, state.nextWaiter)
        }
        switch next {
        case let .ready(connection):
            return eventLoop.makeSucceededFuture(connection)
        case let .open(id):
            return connect(id: id, on: eventLoop)
        case let .wait(promise, id):
            let nanoseconds = waitLimit.components.seconds >= Int64.max / 1_000_000_000 - 1
                ? Int64.max : waitLimit.components.seconds * 1_000_000_000 + waitLimit.components.attoseconds / 1_000_000_000
            let timeout = eventLoop.scheduleTask(in: .nanoseconds(nanoseconds)) { [self] in
                let expired = state.withLock { state -> Bool in
                    guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return false }
                    state.waiters.remove(at: index)
                    return true
                }
                if expired { promise.fail(DatabaseError.busy(timeout: waitLimit)) }
            }
            promise.futureResult.whenComplete { _ in timeout.cancel() }
            return promise.futureResult
        case .closed:
            return eventLoop.makeFailedFuture(DatabaseError.closed)
        }
    }

    /// Opens connection `id`, counted in `open` already; a failure uncounts it.
    private func connect(id: Int, on eventLoop: any EventLoop) -> EventLoopFuture<PostgresConnection> {
        PostgresConnection.connect(on: eventLoop, configuration: configuration, id: id, logger: logger).flatMapErrorThrowing { [self] error in
            let waiters = state.withLock { state -> [Waiter] in
                state.open -= 1
                // Waiters would wait for a release that may never come: with no connection out,
                // they all get the error; else the first does.
                guard !state.waiters.isEmpty else { return [] }
                if state.open == 0 {
                    defer { state.waiters = [] }
                    return state.waiters
                }
                return [state.waiters.removeFirst()]
            }
            for waiter in waiters { waiter.promise.fail(error) }
            throw error
        }
    }

    /// Gives `connection` back: to the next waiter, else to the idle list. A connection the caller
    /// saw fail (`broken`), or that closed, is closed and replaced for a waiter.
    func release(_ connection: PostgresConnection, broken: Bool = false) {
        enum Next { case hand(Waiter), open(Waiter, Int), keep, close }
        let unusable = broken || connection.isClosed
        let next: Next = state.withLock { state in
            if state.closed {
                state.open -= 1
                return .close
            }
            if unusable {
                guard !state.waiters.isEmpty else {
                    state.open -= 1
                    return .close
                }
                state.nextConnectionID += 1
                return .open(state.waiters.removeFirst(), state.nextConnectionID)
            }
            if !state.waiters.isEmpty { return .hand(state.waiters.removeFirst()) }
            state.idle.append(connection)
            assert(state.idle.count <= state.open, "more idle connections than open ones")
            return .keep
        }
        switch next {
        case let .hand(waiter):
            waiter.promise.succeed(connection)
        case let .open(waiter, id):
            _ = Self.close(connection)
            connect(id: id, on: waiter.promise.futureResult.eventLoop).cascade(to: waiter.promise)
        case .keep:
            break
        case .close:
            _ = Self.close(connection)
        }
    }

    /// Closes the idle connections and fails the waiters; connections lent out are closed as they
    /// come back. Later leases fail with `closed`.
    func close() -> EventLoopFuture<Void> {
        let (idle, waiters) = state.withLock { state -> ([PostgresConnection], [Waiter]) in
            state.closed = true
            defer {
                state.open -= state.idle.count
                state.idle = []
                state.waiters = []
            }
            return (state.idle, state.waiters)
        }
        for waiter in waiters { waiter.promise.fail(DatabaseError.closed) }
        let eventLoop = eventLoopGroup.any()
        return EventLoopFuture.andAllComplete(idle.map(Self.close), on: eventLoop)
    }

    /// Closes `connection`, keeping it alive until it is closed (postgres-nio asserts that a
    /// connection is closed before it is deinitialized).
    @discardableResult
    static func close(_ connection: PostgresConnection) -> EventLoopFuture<Void> {
        let closing: EventLoopFuture<Void> = connection.close()
        return closing.always { _ in withExtendedLifetime(connection) {} }
    }
}

import LocalLMDBLMDB
import PostgresNIO

/// Calls to the server, with every error they throw made a `DatabaseError`: the engine's own
/// errors pass through, the server's answers and lost connections become `server` errors that
/// name the operation and, for the server's answers, its SQLSTATE and message.
enum ServerCall {
    /// `body`'s result; its errors as `DatabaseError`s, `operation` naming what failed, and a
    /// lock wait past `busyTimeout` (the server's `lock_timeout`) as `busy` naming it.
    static func run<T>(_ operation: String, busyTimeout: Duration = .zero, _ body: () async throws -> T) async throws(DatabaseError) -> T {
        do {
            return try await body()
        } catch {
            throw databaseError(error, operation, busyTimeout: busyTimeout)
        }
    }

    /// `error` as a `DatabaseError`.
    static func databaseError(_ error: any Error, _ operation: String, busyTimeout: Duration = .zero) -> DatabaseError {
        if let error = error as? DatabaseError { return error }
        if let error = error as? PSQLError {
            if let info = error.serverInfo {
                let state = info[.sqlState] ?? "?"
                // A lock wait past the busy timeout: the write waited for another transaction and
                // nothing of it was kept.
                if state == "55P03" { return .busy(timeout: busyTimeout) }
                let message = info[.message] ?? "no message"
                return .server(operation: operation, message: "\(message) (SQLSTATE \(state))")
            }
            switch error.code {
            case .serverClosedConnection, .clientClosedConnection, .connectionError, .uncleanShutdown:
                // The cause, when there is one (a TLS handshake that failed names the certificate).
                let cause = error.underlying.map { ": \(String(describing: $0))" } ?? ""
                return .server(
                    operation: operation,
                    message: "the connection to the server was lost (\(error.code)\(cause)); a write in progress may or may not have committed")
            default:
                return .server(operation: operation, message: "\(error.code)")
            }
        }
        if let error = error as? IOError {
            return .server(operation: operation, message: "cannot reach the server: \(error.description)")
        }
        return .server(operation: operation, message: String(describing: error))
    }
}

extension EventLoopFuture where Value: Sendable {
    /// The future's value, its error as a `DatabaseError` (a lock wait past `busyTimeout`, the
    /// server's `lock_timeout`, as `busy` naming it).
    func value(_ operation: String, busyTimeout: Duration = .zero) async throws(DatabaseError) -> Value {
        try await ServerCall.run(operation, busyTimeout: busyTimeout) { try await self.get() }
    }
}

extension PostgresConnection {
    /// Runs `query`, collecting its rows, and fails it (closing the connection, whose state is
    /// then unknown) when no answer comes within `limit`; fails at once on a closed connection.
    /// No call into the engine waits for the server without a bound.
    func send(_ query: PostgresQuery, logger: Logger, within limit: Duration) -> EventLoopFuture<PostgresQueryResult> {
        guard !isClosed else {
            return eventLoop.makeFailedFuture(
                DatabaseError.server(operation: "sending a statement", message: "the connection to the server was lost; a write in progress may or may not have committed"))
        }
        let promise = eventLoop.makePromise(of: PostgresQueryResult.self)
        let nanoseconds = limit.components.seconds >= Int64.max / 1_000_000_000 - 1
            ? Int64.max : limit.components.seconds * 1_000_000_000 + limit.components.attoseconds / 1_000_000_000
        let timeout = eventLoop.scheduleTask(in: .nanoseconds(nanoseconds)) { [self] in
            promise.fail(DatabaseError.server(operation: "waiting for the server", message: "no answer within \(limit); the connection was closed"))
            let _: EventLoopFuture<Void> = close()
        }
        self.query(query, logger: logger).whenComplete { result in
            timeout.cancel()
            promise.completeWith(result)
        }
        return promise.futureResult
    }
}

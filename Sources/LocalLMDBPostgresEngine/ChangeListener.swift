import LocalLMDBLMDB
import LocalLMDBEngine
import PostgresNIO

/// Hears the server announce a store's commits (`LISTEN`/`NOTIFY`) and wakes the engine's
/// notifier at once: every commit is followed by a notification of the store's channel, sent in
/// a transaction of its own once the commit is made (`PostgresEngine.announce`, and the put
/// procedure's).
///
/// Notifications are not durable: a listener that was disconnected misses those sent
/// meanwhile. So they only wake; observers read the change log themselves, and the notifier
/// still polls the store's last sequence number, less often, as a safety net.
///
/// The listener's connection is its own (not the pool's), opened by the notifier's poller thread
/// while anyone observes (`ensureListening`, blocking only that thread, for at most the
/// connection's connect timeout), and closed with the engine.
package final class ChangeListener: Sendable {
    private struct State {
        var connection: PostgresConnection?
        /// A poller thread is connecting: another (after the observers came and went) leaves it.
        var connecting = false
        var closed = false
        /// Not retained: the notifier owns the closure that owns this listener.
        weak var notifier: ChangeNotifier?
    }

    private let state = Locked(State())
    private let configuration: PostgresConnection.Configuration
    private let eventLoopGroup: any EventLoopGroup
    private let logger: Logger
    /// The store's channel: its tables' prefix.
    let channel: String

    init(configuration: PostgresConnection.Configuration, channel: String, eventLoopGroup: any EventLoopGroup, logger: Logger) {
        self.configuration = configuration
        self.channel = channel
        self.eventLoopGroup = eventLoopGroup
        self.logger = logger
    }

    /// The notifier to wake.
    func wake(_ notifier: ChangeNotifier) {
        state.withLock { $0.notifier = notifier }
    }

    /// Connects and listens when not listening already (on the poller's thread only). A failure
    /// is left to the next poll: meanwhile the poll finds commits.
    func ensureListening() {
        let mustConnect = state.withLock { state -> Bool in
            guard !state.closed, !state.connecting, state.connection?.isClosed ?? true else { return false }
            state.connecting = true
            return true
        }
        guard mustConnect else { return }
        let connection: PostgresConnection
        do {
            connection = try PostgresConnection.connect(on: eventLoopGroup.any(), configuration: configuration, id: 0, logger: logger).wait()
        } catch {
            state.withLock { $0.connecting = false }
            return
        }
        let listening = Self.addListener(on: connection, channel: channel) { [weak self] in
            self?.state.withLock { $0.notifier }?.wakeAll()
        }
        guard listening else {
            // Closed meanwhile (the server restarting, say): the next poll connects again.
            state.withLock { $0.connecting = false }
            _ = try? connection.close().wait()
            return
        }
        // `LISTEN` is queued on the connection, not awaited: a statement after it answers once it
        // took effect, so that a commit after `ensureListening` returns is heard.
        do {
            _ = try connection.send("SELECT 1", logger: logger, within: .seconds(10)).wait()
        } catch {
            state.withLock { $0.connecting = false }
            _ = try? connection.close().wait()
            return
        }
        let (kept, replaced) = state.withLock { state -> (Bool, PostgresConnection?) in
            state.connecting = false
            guard !state.closed else { return (false, nil) }
            defer { state.connection = connection }
            return (true, state.connection)
        }
        _ = try? replaced?.close().wait()
        if !kept { _ = try? connection.close().wait() }
    }

    /// Makes `wake` hear the notifications of `channel` on `connection`, unless the connection is
    /// closed; returns whether it listens. Blocks the calling thread (never the connection's
    /// event loop) until it is done.
    ///
    /// postgres-nio hands a listener to the connection's channel; on a channel already closed, that
    /// hand-off fails and drops the listener without telling it, and the dropped listener then
    /// stops the process (its `deinit` asserts it was told). So the check and the hand-off are
    /// made in one job on the event loop, where the channel cannot close between them; once the
    /// connection has the listener, its closing tells it.
    package static func addListener(on connection: PostgresConnection, channel: String, wake: @escaping @Sendable () -> Void) -> Bool {
        let added = try? connection.eventLoop.submit { () -> Bool in
            guard !connection.isClosed else { return false }
            connection.addListener(channel: channel) { _, _ in wake() }
            return true
        }.wait()
        return added ?? false
    }

    /// Stops listening, for good.
    func close() {
        let connection = state.withLock { state -> PostgresConnection? in
            state.closed = true
            defer { state.connection = nil }
            return state.connection
        }
        _ = try? connection?.close().wait()
    }
}

import LocalLMDBPostgresEngine
import PostgresNIO

// `helper listen-closed`: connects, closes the connection, then asks to listen on it as the
// engine's change listener does (`ChangeListener.addListener`): a server that went away between
// the connection and the listening. Prints "not listening" (or "listening", wrongly), then, once
// the connection's event loop has run every job queued before, "done". A listener dropped
// unheard stops the process before "done" (postgres-nio asserts in its `deinit`).

enum ListenOnClosed {
    static func run(configuration: PostgresConnection.Configuration) async {
        do {
            let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: Logger(label: "helper"))
            try await connection.close()
            let listening = ChangeListener.addListener(on: connection, channel: "locallmdb_helper_listen_closed") {}
            print(listening ? "listening" : "not listening")
            // The jobs queued on the event loop before this one (the hand-off of a listener) are
            // done when it is.
            try await connection.eventLoop.submit {}.get()
            print("done")
        } catch {
            print("failed \(error)")
        }
    }
}

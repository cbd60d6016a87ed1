import Foundation
import LocalLMDB
@testable import LocalLMDBPostgres
@testable import LocalLMDBPostgresEngine
import LocalLMDBEngine
import LocalLMDBTestSupport
import Testing

extension PostgresTests {
    @Suite("PostgreSQL change feed", .serialized)
    struct PostgresChangesTests {
        @Test("changes(since:) and changes() give every server process's commits in order; a trimmed log is a typed error")
        func changeFeed() async throws {
            let name = PostgresServer.uniqueStore()
            try await PostgresServer.withDatabase(store: name) { store in
                try await PostgresServer.withDatabase(store: name) { other in
                    try await store.write(Record(id: "before", data: Note(text: "0")))
                    let token = try await store.changeToken()
                    var all = try await store.changes().makeAsyncIterator()
                    var entries = try await store.changes(of: Entry.self).makeAsyncIterator()
                    try await other.write(Record(id: "n1", data: Note(text: "1")))
                    try await other.write(Record(id: "e1", data: Entry(sequence: 1, payload: "e")))
                    _ = try await other.delete(id: "n1")

                    let feed = try await store.changes(since: token)
                    #expect(feed.commits.map(\.changes) == [
                        [.written(id: "n1", className: "Note")], [.written(id: "e1", className: "Entry")],
                        [.deleted(id: "n1", className: "Note")],
                    ])
                    #expect(feed.token == (try await other.changeToken()))
                    #expect(try await store.changes(since: feed.token).commits.isEmpty)
                    #expect(try await all.next()?.changes == [.written(id: "n1", className: "Note")])
                    #expect(try await all.next()?.changes == [.written(id: "e1", className: "Entry")])
                    #expect(try await all.next()?.changes == [.deleted(id: "n1", className: "Note")])
                    #expect(try await entries.next()?.changes == [.written(id: "e1", className: "Entry")])

                    #expect(try await store.trimChangeLog(keeping: 1) > 0)
                    do {
                        _ = try await store.changes(since: token)
                        Issue.record("a feed past a trimmed log was given")
                    } catch let error as LocalDatabaseError {
                        guard case .changesUnavailable = error else { throw error }
                    }
                }
            }
        }
    

        @Test("Listening on a connection closed meanwhile (the server restarting) is refused, and the process goes on: postgres-nio stops a process whose listener it dropped unheard")
        func listeningOnAClosedConnection() async throws {
            let helper = try replicationHelper()
            // In a process of its own: without the check, the dropped listener stops it.
            let process = try ChildProcess(
                helper.path, ["listen-closed"], environment: helperEnvironment(try PostgresServer.address.get()), output: .pipe)
            let output = process.output?.readText() ?? ""
            #expect(process.waitUntilExit().succeeded, "\(output)")
            #expect(output.split(separator: "\n").map(String.init) == ["not listening", "done"], "\(output)")
        }

        @Test("The server announces each commit (NOTIFY) and a listener wakes its notifier with no poll at all")
        func notificationsWake() async throws {
            let name = PostgresServer.uniqueStore()
            try await PostgresServer.withDatabase(store: name) { store in
                try await PostgresServer.withDatabase(store: name) { other in
                    // A notifier no one subscribes to never polls: only the listener can wake it.
                    let notifier = ChangeNotifier(latest: { nil })
                    let engine = store.engine
                    let listener = ChangeListener(
                        configuration: engine.pool.configuration, channel: engine.schema.prefix,
                        eventLoopGroup: engine.pool.eventLoopGroup, logger: engine.logger)
                    defer { listener.close() }
                    listener.wake(notifier)
                    listener.ensureListening()
                    let version = notifier.version
                    let waiting = Task { await notifier.wait(after: version) }
                    let bound = Task {
                        try await Task.sleep(for: .seconds(30))
                        waiting.cancel()
                    }
                    try await other.write(Record(id: "n", data: Note(text: "announced")))
                    #expect(await waiting.value)
                    bound.cancel()
                    #expect(notifier.version > version)
                }
            }
        }
    }
}

import Foundation
import LocalLMDB
@testable import LocalLMDBPostgres
@testable import LocalLMDBPostgresEngine
import LocalLMDBStore
import LocalLMDBLMDB
import LocalLMDBTestSupport
import PostgresNIO
import Testing

extension PostgresTests {
    /// Writes of records by key that go from the writer's task straight to the put procedure
    /// (`PostgresEngine.putFromTask`), beside the engine thread's group commits.
    @Suite("Writes from tasks", .serialized)
    struct WritesFromTasksTests {
        @Test("Many tasks writing at once, some straight from their tasks and some in groups: every write stored, and logged once")
        func manyTasksAtOnce() async throws {
            try await PostgresServer.withDatabase(connections: 3) { store in
                let start = try await store.engine.currentChangeToken()
                // The first write learns the class's claim: later ones may go from their tasks.
                try await store.write(Record(id: "warm", data: Note(text: "v")))
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for task in 0..<8 {
                        group.addTask {
                            for index in 0..<25 { try await store.write(Record(id: "t\(task)-\(index % 10)", data: Note(text: "\(task)/\(index)"))) }
                        }
                    }
                    try await group.waitForAll()
                }
                for task in 0..<8 {
                    for key in 0..<10 {
                        let note: Note? = try await store.read(id: "t\(task)-\(key)")
                        #expect(note?.text == "\(task)/\(key + (key < 5 ? 20 : 10))")
                    }
                }
                #expect(try await store.count(Note.self) == 81)
                let feed = try await store.engine.changeFeed(since: start, limit: 1_000)
                let written = feed.commits.flatMap(\.changes).compactMap { change -> String? in
                    if case let .written(id, _) = change { return id }
                    return nil
                }
                #expect(written.count == 201)
                var expected: [String: Int] = ["warm": 1]
                for task in 0..<8 {
                    for key in 0..<10 { expected["t\(task)-\(key)"] = key < 5 ? 3 : 2 }
                }
                let logged: [String: Int] = Dictionary(grouping: written, by: { $0 }).mapValues(\.count)
                #expect(logged == expected)
            }
        }

        @Test("Closing waits for a write that went straight from its task to the server: the write ends first, with its answer")
        func closingWaitsForAWriteFromATask() async throws {
            let name = PostgresServer.uniqueStore()
            let logger = Logger(label: "tests")
            let store = try await PostgresStore(configuration: PostgresServer.configuration(), name: name, connections: 4)
            // The first write records the class, the second learns that its claim records nothing:
            // the next goes from its task.
            for index in 0..<2 { try await store.write(Record(id: "warm\(index)", data: Note(text: "v"))) }
            let ended = Locked<[String]>([])
            try await PostgresServer.withConnection { other in
                // The writers' lock, held exclusively: the write waits for it on the server.
                _ = try await other.query("BEGIN", logger: logger)
                _ = try await other.query(store.engine.schema.writersLock(.exclusive), logger: logger)
                let write = Task {
                    try await store.write(Record(id: "held", data: Note(text: "v")))
                    ended.withLock { $0.append("write") }
                }
                #expect(try await PostgresServer.someoneWaitsForALock())
                #expect(store.engine.shared.withLock { $0.writesFromTasks } == 1)
                let closing = Task {
                    await store.close()
                    ended.withLock { $0.append("close") }
                }
                // Once the engine is closing (it refuses new writes), the write may go on.
                #expect(try await eventually { store.engine.shared.withLock { $0.closed } })
                _ = try await other.query("COMMIT", logger: logger)
                try await write.value
                await closing.value
            }
            #expect(ended.withLock { $0 } == ["write", "close"])
            try await PostgresServer.withDatabase(store: name) { reopened in
                let held: Note? = try await reopened.read(id: "held")
                #expect(held?.text == "v")
            }
        }

        @Test("Closing while a write from a task is answered and tasks occupy the whole cooperative pool: the close ends without a free thread of the pool, and the write is kept")
        func closingWithThePoolOccupied() async throws {
            let helper = try replicationHelper()
            let name = PostgresServer.uniqueStore()
            // In a process of its own: it occupies every thread of its cooperative pool.
            let process = try ChildProcess(
                helper.path, ["close-blocked", name], environment: helperEnvironment(try PostgresServer.address.get()), output: .pipe)
            let output = process.output?.readText() ?? ""
            #expect(process.waitUntilExit().succeeded, "\(output)")
            let lines = output.split(separator: "\n").map(String.init)
            #expect(lines == ["closed while the pool was blocked", "write ok", "done"], "\(output)")
            try await PostgresServer.withDatabase(store: name) { reopened in
                let held: Note? = try await reopened.read(id: "held")
                #expect(held?.text == "v1")
            }
        }
    }
}

import Foundation
import LocalLMDB
import LocalLMDBPostgres
import LocalLMDBTestSupport
import PostgresNIO

// `helper close-blocked STORE`: closes a store (`closeBlocking`, from a thread of its own) while a
// write that went from its task to the server waits for its answer and tasks occupy every thread
// of the cooperative pool. The scenario runs in a task that prefers a thread of its own (on Linux
// the main actor's jobs may run on the pool's threads). Prints "closed while the pool
// was blocked" when the close ended with every pool thread still occupied, or "close stuck" when
// it had not ended within 30 seconds (the pool is then set free, so that the process ends); then
// "write ok" or "write failed <error>", and "done".

/// Signals `started`, then occupies the calling thread (one of the cooperative pool's) until
/// `release` is signalled.
private func occupy(started: DispatchSemaphore, release: DispatchSemaphore) {
    started.signal()
    release.wait()
}

/// The scenario, run by a task that prefers a thread of its own (`DedicatedThreadExecutor`).
enum BlockedPoolCloser {
    static func run(store name: String, configuration: PostgresConnection.Configuration) async {
        do {
            let store = try await PostgresStore(configuration: configuration, name: name, connections: 4)
            // The first write records the class, the second learns that its claim records
            // nothing: later writes of the class go from their tasks (the put procedure).
            for index in 0..<2 { try await store.write(Record(id: "warm\(index)", data: Note(text: "v"))) }
            try await store.write(Record(id: "held", data: Note(text: "v0")))
            // Another session locks the record's row: the write waits for it on the server.
            let logger = Logger(label: "helper")
            let other = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
            _ = try await other.query("BEGIN", logger: logger)
            var key = PostgresBindings()
            key.append(ByteBuffer(string: "held"))
            _ = try await other.query(
                PostgresQuery(unsafeSQL: "SELECT 1 FROM \(PostgresStore.tablePrefix(of: name))_records WHERE key = $1 FOR UPDATE", binds: key),
                logger: logger)
            let write = Task.detached { try await store.write(Record(id: "held", data: Note(text: "v1"))) }
            // Until a session waits for this one's lock (no other session's wait counts), for at
            // most 30 s.
            let deadline = ContinuousClock.now + .seconds(30)
            while try await other.query("SELECT count(*) FROM pg_stat_activity WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))", logger: logger)
                .collect().first?.decode(Int.self) == 0 {
                guard ContinuousClock.now < deadline else { fail("the write did not wait for the row's lock") }
                await Task.yield()
            }
            // Every thread of the pool occupied.
            let width = ProcessInfo.processInfo.activeProcessorCount
            let started = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            for _ in 0..<width { Task.detached { occupy(started: started, release: release) } }
            for _ in 0..<width where started.wait(timeout: .now() + 30) == .timedOut { fail("the cooperative pool was not occupied") }
            // The store closed from a thread of its own, and the row's lock released (its
            // session closed, by a future: no task): the write's answer comes, and no thread of
            // the pool is free to resume its task. The close waits for the write.
            let closed = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                store.engine.closeBlocking()
                closed.signal()
            }
            other.close().whenComplete { _ in }
            if closed.wait(timeout: .now() + 30) == .success {
                say("closed while the pool was blocked")
                for _ in 0..<width { release.signal() }
            } else {
                say("close stuck")
                for _ in 0..<width { release.signal() }
                closed.wait()
            }
            do {
                _ = try await write.value
                say("write ok")
            } catch {
                say("write failed \(error)")
            }
            say("done")
        } catch {
            fail("error \(error)")
        }
    }
}

import Foundation
import LocalLMDB
import LocalLMDBPostgres
import LocalLMDBTestSupport
import PostgresNIO

// The child process of the replication tests, which kill it at random moments.
//
//   helper push DIR STORE    replicates the LocalDatabase in DIR into the store STORE of the server
//                            that LOCALLMDB_POSTGRES_* name, forever, printing "running" once started
//                            and "position <position>" after each pass that moved it
//   helper pull DIR STORE    the same the other way: keeps the LocalDatabase in DIR a replica of STORE
//   helper pull-unpublish DIR STORE
//                            catches the replica in DIR up with STORE once, then dies as a replicator
//                            killed between writing its last commit and publishing it, printing
//                            "unpublished <transaction id>"
//   helper migrate STORE BATCH
//                            runs MigrationWorkload's migrator on STORE in batches of BATCH records,
//                            printing "progress <visited> <written>" after each and "done <count>"

let arguments = CommandLine.arguments
let environment = ProcessInfo.processInfo.environment

/// Prints `line` at once (stdout is a pipe: buffered output would be lost to SIGKILL).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(2)
}

guard arguments.count == 4, ["push", "pull", "pull-unpublish", "migrate"].contains(arguments[1]) else {
    fail("usage: helper push|pull|pull-unpublish DIR STORE, or helper migrate STORE BATCH")
}
guard let host = environment["LOCALLMDB_POSTGRES_HOST"], let port = environment["LOCALLMDB_POSTGRES_PORT"].flatMap(Int.init),
      let user = environment["LOCALLMDB_POSTGRES_USER"], let database = environment["LOCALLMDB_POSTGRES_DATABASE"]
else { fail("LOCALLMDB_POSTGRES_* are not set") }
let configuration = PostgresConnection.Configuration(
    host: host, port: port, username: user, password: environment["LOCALLMDB_POSTGRES_PASSWORD"], database: database, tls: .disable)

if arguments[1] == "migrate" {
    // Runs MigrationWorkload's migrator on the store in batches of BATCH, printing
    // "progress <visited> <written>" after each batch and "done <count>" at the end; a test
    // kills it at a random moment.
    do {
        guard let batchSize = Int(arguments[3]), batchSize > 0 else { fail("migrate needs BATCH") }
        let store = try await PostgresStore(configuration: configuration, name: arguments[2], connections: 2, busyTimeout: .seconds(300))
        let done = try await store.migrate(with: MigrationWorkload.migrator(batchSize: batchSize)) { progress in
            say("progress \(progress.recordsVisited) \(progress.recordsWritten)")
        }
        say("done \(done.count)")
        await store.close()
        exit(0)
    } catch {
        fail("error \(error)")
    }
}

do {
    let local = try LocalDatabase(directory: URL(fileURLWithPath: arguments[2]))
    let store = try await PostgresStore(configuration: configuration, name: arguments[3], connections: 2)
    if arguments[1] == "pull-unpublish" {
        _ = try await PullReplicator(from: store, to: local).catchUp()
        await local.close()
        say("unpublished \(try unpublishLastCommit(in: URL(fileURLWithPath: arguments[2])))")
        kill(getpid(), SIGKILL)
    }
    let position: @Sendable () -> String?
    let run: () async throws -> Void
    if arguments[1] == "push" {
        let replicator = PushReplicator(from: local, to: store, source: "kill-test")
        (position, run) = ({ replicator.progress.position }, { try await replicator.run() })
    } else {
        let replicator = PullReplicator(from: store, to: local)
        (position, run) = ({ replicator.progress.position }, { try await replicator.run() })
    }
    say("running")
    let watcher = Task {
        var last: String?
        while !Task.isCancelled {
            let current = position()
            if current != last, let current {
                say("position \(current)")
                last = current
            }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }
    try await run()
    watcher.cancel()
} catch {
    fail("error \(error)")
}

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
//   helper hostile STORE OTHER
//                            a hostile device: with the credentials LOCALLMDB_POSTGRES_* name (a role
//                            the store STORE was provisioned for), writes to STORE, then tries to
//                            open the store OTHER and to read, change or take over its tables, row,
//                            role and sequence with statements of its own, printing one line for
//                            each attempt ("<label> refused", "<label> rows <n>", "<label> ok")
//   helper device DIR STORE NAME SEED OPS JOURNAL
//                            a device of the synchronization convergence test (SyncDevice.swift)
//   helper listen-closed       asks to listen on a connection already closed, as the engine's
//                            change listener does (ListenOnClosed.swift)
//   helper close-blocked STORE
//                            closes STORE from the main actor while a write from a task waits for
//                            its answer and tasks occupy the whole cooperative pool (BlockedPoolClose.swift)

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

guard (arguments.count == 4 && ["push", "pull", "pull-unpublish", "migrate", "hostile"].contains(arguments[1]))
    || (arguments.count > 1 && arguments[1] == "device") || (arguments.count == 3 && arguments[1] == "close-blocked")
    || (arguments.count == 2 && arguments[1] == "listen-closed")
else {
    fail("usage: helper push|pull|pull-unpublish DIR STORE, helper migrate STORE BATCH, helper hostile STORE OTHER, helper close-blocked STORE, helper listen-closed, or helper device …")
}
guard let host = environment["LOCALLMDB_POSTGRES_HOST"], let port = environment["LOCALLMDB_POSTGRES_PORT"].flatMap(Int.init),
      let user = environment["LOCALLMDB_POSTGRES_USER"], let database = environment["LOCALLMDB_POSTGRES_DATABASE"]
else { fail("LOCALLMDB_POSTGRES_* are not set") }
let configuration = PostgresConnection.Configuration(
    host: host, port: port, username: user, password: environment["LOCALLMDB_POSTGRES_PASSWORD"], database: database, tls: .disable)

if arguments[1] == "device" {
    await syncDevice(arguments, configuration: configuration)
}

if arguments[1] == "listen-closed" {
    await ListenOnClosed.run(configuration: configuration)
    exit(0)
}

if arguments[1] == "close-blocked" {
    await Task(executorPreference: DedicatedThreadExecutor()) { await BlockedPoolCloser.run(store: arguments[2], configuration: configuration) }.value
    exit(0)
}

if arguments[1] == "hostile" {
    await hostileDevice(store: arguments[2], other: arguments[3], configuration: configuration)
    exit(0)
}

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

/// The hostile device's attempts (`helper hostile STORE OTHER`).
func hostileDevice(store: String, other: String, configuration: PostgresConnection.Configuration) async {
    do {
        let own = try await PostgresStore(configuration: configuration, name: store, connections: 1)
        try await own.write(Record(id: "mine", data: Note(text: "the device's own")))
        say("own-store ok \(try await own.count())")
        await own.close()
    } catch {
        say("own-store failed \(error)")
    }
    do {
        let theirs = try await PostgresStore(configuration: configuration, name: other, connections: 1)
        say("open-other ok \(try await theirs.count())")
        await theirs.close()
    } catch {
        say("open-other refused")
    }
    let prefix = PostgresStore.tablePrefix(of: other)
    // The other store's group role, found as anyone can: role names and their comments are public.
    var group = "none"
    do {
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 2, logger: Logger(label: "hostile"))
        let rows = try await connection.query(
            "SELECT rolname FROM pg_roles WHERE shobj_description(oid, 'pg_authid') LIKE \("LocalLMDB store " + prefix + " of %")",
            logger: Logger(label: "hostile")).collect()
        if let name = try? rows.first?.decode(String.self) { group = name }
        try await connection.close()
    } catch {
        say("find-group failed \(error)")
    }
    say("found-group \(group.hasPrefix("locallmdb_store_") ? "yes" : "no")")
    let attempts: [(String, String)] = [
        ("read-records", "SELECT count(*) FROM \(prefix)_records"),
        ("read-log", "SELECT count(*) FROM \(prefix)_log"),
        ("read-classes", "SELECT count(*) FROM \(prefix)_classes"),
        ("read-entries", "SELECT count(*) FROM \(prefix)_entries"),
        ("see-row", "SELECT count(*) FROM locallmdb_stores WHERE prefix = '\(prefix)'"),
        ("see-rows", "SELECT count(*) FROM locallmdb_stores"),
        ("update-row", "WITH changed AS (UPDATE locallmdb_stores SET version = 1, migrations = NULL WHERE prefix = '\(prefix)' RETURNING 1) SELECT count(*) FROM changed"),
        ("delete-row", "WITH deleted AS (DELETE FROM locallmdb_stores WHERE prefix = '\(prefix)' RETURNING 1) SELECT count(*) FROM deleted"),
        ("write-sequencer", "UPDATE \(prefix)_sequencer SET last = 0"),
        ("take-row", "UPDATE locallmdb_stores SET prefix = '\(prefix)'"),
        ("write-records", "INSERT INTO \(prefix)_records VALUES ('\\x01', '\\x01', '\\x01', '\\x01')"),
        ("delete-log", "DELETE FROM \(prefix)_log"),
        ("drop-table", "DROP TABLE \(prefix)_records"),
        ("alter-table", "ALTER TABLE \(prefix)_records ADD COLUMN stolen integer"),
        ("take-ticks", "SELECT nextval('\(prefix)_ticks')"),
        ("join-role", "GRANT \(group) TO CURRENT_USER"),
        ("become-role", "SET ROLE \(group)"),
        ("drop-policy", "DROP POLICY locallmdb_granted_stores ON locallmdb_stores"),
        ("disable-security", "ALTER TABLE locallmdb_stores DISABLE ROW LEVEL SECURITY"),
        ("create-table", "CREATE TABLE locallmdb_stolen (x integer)"),
    ]
    do {
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: Logger(label: "hostile"))
        for (label, statement) in attempts {
            do {
                let rows = try await connection.query(PostgresQuery(unsafeSQL: statement), logger: Logger(label: "hostile")).collect()
                if let count = try? rows.first?.decode(Int64.self) {
                    say("\(label) rows \(count)")
                } else {
                    say("\(label) ok")
                }
            } catch {
                // The server's reason: 42501 is "insufficient privilege".
                say("\(label) refused \((error as? PSQLError)?.serverInfo?[.sqlState] ?? "without a server error")")
            }
        }
        try await connection.close()
    } catch {
        say("connect failed \(error)")
    }
    say("done")
}

import Foundation
import LocalLMDB
import LocalLMDBPostgres
import PostgresNIO

// A to-do list kept on each device and synchronized through a PostgreSQL server (the guide
// *Syncing devices*). Run two of it against the server scripts/postgres starts:
//
//   export $(scripts/postgres start | xargs)
//   swift run locallmdb-sync-example /tmp/alice alice watch        # one terminal: prints what arrives
//   swift run locallmdb-sync-example /tmp/bob bob add "buy milk"   # another: writes, then synchronizes
//   swift run locallmdb-sync-example /tmp/bob bob done <id>
//   swift run locallmdb-sync-example /tmp/alice alice list
//
// The store is `sync-example` (LOCALLMDB_SYNC_EXAMPLE_STORE names another).
// Writes are made locally first, online or not; each command then synchronizes once (and says so
// when the server cannot be reached: the writes stay pending until a later run sends them).

/// A to-do item, stored as a record of its own.
struct Todo: Codable, Persistable, Identifiable {
    var id: String
    var title: String
    var done: Bool
}

func usage() -> Never {
    print("usage: locallmdb-sync-example DIRECTORY DEVICE add TITLE | done ID | remove ID | list | watch")
    exit(64)
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 3 else { usage() }
let (directory, device, command) = (arguments[0], arguments[1], arguments[2])
let environment = ProcessInfo.processInfo.environment
guard let host = environment["LOCALLMDB_POSTGRES_HOST"], let port = environment["LOCALLMDB_POSTGRES_PORT"].flatMap(Int.init),
      let user = environment["LOCALLMDB_POSTGRES_USER"], let database = environment["LOCALLMDB_POSTGRES_DATABASE"]
else {
    print("Set LOCALLMDB_POSTGRES_HOST, _PORT, _USER, _PASSWORD and _DATABASE (scripts/postgres start prints them).")
    exit(2)
}
let configuration = PostgresConnection.Configuration(
    host: host, port: port, username: user, password: environment["LOCALLMDB_POSTGRES_PASSWORD"], database: database, tls: .disable)

let local = try LocalDatabase(directory: URL(fileURLWithPath: directory))

// The local write comes first: it needs no server.
switch command {
case "add" where arguments.count == 4:
    let todo = Todo(id: UUID().uuidString.prefix(8).lowercased(), title: arguments[3], done: false)
    try await local.write(todo)
    print("added \(todo.id)")
case "done" where arguments.count == 4:
    guard var todo = try await local.read(Todo.self, id: arguments[3]) else {
        print("no item \(arguments[3])")
        exit(1)
    }
    todo.done = true
    try await local.write(todo)
case "remove" where arguments.count == 4:
    _ = try await local.delete(id: arguments[3])
case "list", "watch":
    break
default:
    usage()
}

func show(_ todos: [Todo]) async throws {
    for todo in todos.sorted(by: { $0.title < $1.title }) {
        let state: String
        switch try await local.syncState(of: todo.id) {
        case .pending: state = "pending"
        case .synced: state = "synced"
        case .unknown: state = "local"
        }
        print("\(todo.done ? "[x]" : "[ ]") \(todo.title)  (\(todo.id), \(state))")
    }
}

let server: PostgresStore
do {
    server = try await PostgresStore(
        configuration: configuration, name: environment["LOCALLMDB_SYNC_EXAMPLE_STORE"] ?? "sync-example", connections: 2)
} catch {
    print("the server cannot be reached (\(error)); the change is kept and will be sent by a later run")
    try await show(try await local.read())
    await local.close()
    exit(0)
}
let synchronizer = Synchronizer(local, with: server, device: device)

if command == "watch" {
    // Synchronizes until interrupted, printing what arrives and every local write that lost.
    let conflicts = synchronizer.conflicts()
    Task {
        for await conflict in conflicts {
            print("conflict: your version of \(conflict.recordID) lost to \(conflict.winningStamp.device)'s: \(conflict.localJSON ?? "a deletion")")
        }
    }
    Task {
        for try await commit in local.changes(of: Todo.self) {
            for change in commit.changes {
                switch change {
                case let .written(id, _):
                    if let todo = try await local.read(Todo.self, id: id) { print("now: \(todo.done ? "[x]" : "[ ]") \(todo.title) (\(id))") }
                case let .deleted(id, _): print("removed \(id)")
                default: print("changed: \(change)")
                }
            }
        }
    }
    print("watching as \(device); interrupt to stop")
    try await synchronizer.run()
} else {
    do {
        try await synchronizer.synchronize()
    } catch {
        print("not synchronized (\(error)); the change stays pending")
    }
    try await show(try await local.read())
    await server.close()
    await local.close()
}

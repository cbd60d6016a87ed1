import CLMDB
import Foundation
import LocalLMDB
import LocalLMDBEncryption
import LocalLMDBTestSupport

// The child process of the crash and multi-process tests.
//
//   helper write-loop DIR PREFIX     writes Entry records forever, printing "ack <id>" after each
//                                    write and "txn <n> <id>…" after each committed transaction
//   helper write-count DIR PREFIX N  writes N Entry records, then prints "done"
//   helper crash-loop DIR SEED       runs CrashWorkload's operations for SEED forever, printing
//                                    "ack <n>" once operation n has returned
//   helper fork-nonces               prints the nonce sealed next in a forked child ("child <hex>"),
//                                    then in the parent ("parent <hex>")
//   helper fork-while-sealing        forks 200 times while a thread seals, each child sealing
//                                    once; prints "failed <children that hung or failed>",
//                                    then "status <wait status>" for each of them
//   helper describe DIR ID           reads ID as Person and prints its class and fields
//   helper count DIR                 prints the number of Entry records
//   helper write-big DIR PREFIX N KB writes N Entry records of KB kilobytes each, then prints "done"
//   helper hold-reader DIR           opens DIR with raw LMDB, begins a read transaction, prints
//                                    "holding" and sleeps until killed
//   helper looping-readers DIR       runs 20 transactions beside tasks looping on reads, printing
//                                    "elapsed <s> deadline-hit <loops> notes <n>"
//   (HELPER_BUSY_SECONDS in the environment sets the busy timeout of the commands below)
//   helper read-note DIR ID          reads Note ID and prints its text, or "missing"
//   helper unpublish DIR ID          writes Note ID, then leaves its commit unpublished and dies
//                                    holding LMDB's writer lock, as a writer killed mid-commit
//   helper raw-put DIR DB KEY VALUE  puts KEY = VALUE into the named database DB with raw LMDB
//   helper stale-readers DIR         opens DIR with raw LMDB and prints how many stale reader
//                                    slots mdb_reader_check cleared
//   helper set-owner DIR NAME MANGLED records with raw LMDB that class NAME is owned by the type
//                                    with that mangled name, then prints "done"
//   helper open DIR                  opens DIR, printing "opened" or "error <description>"
//   helper write-tickets DIR QUEUE N writes Tickets QUEUE-0… of priorities 0…N-1, then prints "done"
//   helper count-queue DIR QUEUE     prints how many Tickets of QUEUE its index query finds
//   helper ticket-loop DIR           writes, moves and deletes indexed Tickets for ever, printing
//                                    "ack <n>" once operation n has returned
//   helper hold-writer DIR           opens DIR with raw LMDB, begins a write transaction, prints
//                                    "holding" and sleeps until killed
//   helper default-serialization     opens SerializationDatabase() (the default directory, from
//                                    XDG_DATA_HOME), writes a Note, prints the result and lastError
//   helper write-drawing DIR         writes Circle "c" and Drawing "d" holding a Circle
//   helper write-toolbox DIR         writes Hammer "h" and Toolbox "t" holding a Hammer
//   helper write-codable-drawing DIR writes CodableCircle "c" and CodableDrawing "d" holding one
//   helper backup DIR DEST           backs DIR up into DEST, printing "progress <bytes>" at each
//                                    report and "done"; with HELPER_STOP_AFTER=N, waits to be
//                                    killed at the Nth report (the copy is not renamed yet)
//   helper reencrypt DIR             re-encrypts in batches of 50, printing "progress <visited>"
//                                    after each batch and "done <n>" at the end; with
//                                    HELPER_STOP_AFTER=N, waits to be killed after N batches
//   helper reencrypt-batches DIR BATCH re-encrypts in batches of BATCH records, printing
//                                    "progress <visited> <resealed>" after each batch (from the
//                                    progress callback, then going straight on to the next batch)
//                                    and "done <n>" at the end
//   (HELPER_KEYS="id=hex,id=hex" in the environment opens the database encrypted, sealing
//   under the first key)
//   helper migrate-batches DIR BATCH runs MigrationWorkload's migrator in batches of BATCH records,
//                                    printing "progress <visited> <written>" after each batch and
//                                    "done <migrations completed>" at the end
//   helper write-deep-codable DIR N  writes a Codable model nested N + 1 levels deep through
//                                    SerializationDatabase on the main thread; prints "written",
//                                    "unencodable <id> <path length>" or "error <description>"

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(2)
}

/// Puts `key` = `value` into the named database with raw LMDB in one transaction, then closes.
func rawPut(database name: String, create: Bool, key: [UInt8], value: [UInt8]) {
    let env = openRawEnvironment()
    var txn: OpaquePointer?
    var dbi: MDB_dbi = 0
    guard mdb_txn_begin(env, nil, 0, &txn) == 0, mdb_dbi_open(txn, name, UInt32(create ? MDB_CREATE : 0), &dbi) == 0 else {
        fail("cannot open \(name)")
    }
    var key = key
    var value = value
    let code = key.withUnsafeMutableBytes { keyBytes in
        value.withUnsafeMutableBytes { valueBytes in
            var keyValue = MDB_val(mv_size: keyBytes.count, mv_data: keyBytes.baseAddress)
            var dataValue = MDB_val(mv_size: valueBytes.count, mv_data: valueBytes.baseAddress)
            return mdb_put(txn, dbi, &keyValue, &dataValue, 0)
        }
    }
    guard code == 0, mdb_txn_commit(txn) == 0 else { fail("cannot write \(name)") }
    mdb_env_close(env)
}

let arguments = CommandLine.arguments
if arguments.count == 2, arguments[1] == "default-serialization" {
    let database = SerializationDatabase()
    let written = database.write(Record(id: "n", data: Note(text: "hello")))
    say("\(written) \(database.count()) \(database.lastError.map { "\($0)" } ?? "none")")
    exit(0)
}
/// A short text sealed by `cipher` under its key "k", with no associated data: what the fork
/// commands seal.
func sealSample(_ cipher: AESGCMCipher) throws -> [UInt8] {
    try [UInt8]("text".utf8).withUnsafeBytes { text in
        try [UInt8]().withUnsafeBytes { try cipher.seal(text, keyID: "k", associatedData: $0) }
    }
}

if arguments.count == 2, arguments[1] == "fork-nonces" {
    // Seals a value (which draws a block of nonces), forks, and prints the nonce of the next
    // value sealed in the child, then in the parent: they must differ.
    let cipher = try AESGCMCipher(current: EncryptionKey.random(id: "k"))
    func nonce() throws -> String {
        try sealSample(cipher).prefix(12).map { String(format: "%02x", $0) }.joined()
    }
    _ = try nonce()
    let child = fork()
    if child == 0 {
        // Bounded: a child that hangs is ended by SIGALRM, and the test sees no nonce of it.
        alarm(5)
        let line = Array("child \((try? nonce()) ?? "error")\n".utf8)
        _ = line.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
        _exit(0)
    }
    guard child > 0 else { fail("fork failed") }
    var status: Int32 = 0
    _ = waitpid(child, &status, 0)
    say("parent \(try nonce())")
    exit(0)
}
if arguments.count == 2, arguments[1] == "fork-while-sealing" {
    // Forks 200 times while another thread seals without pause; each child seals once (with
    // ten seconds to do it, or SIGALRM ends it: a child hung on a lock never finishes, and one
    // merely starved on a loaded machine, as CI's is, gets time) and exits. Prints how many
    // children did not, then each such child's wait status (a signal, or an exit code).
    let cipher = try AESGCMCipher(current: EncryptionKey.random(id: "k"))
    let seal: @Sendable () -> Bool = { (try? sealSample(cipher)) != nil }
    let sealer = Thread { while true { _ = seal() } }
    sealer.start()
    var failures: [Int32] = []
    for _ in 0..<200 {
        let child = fork()
        if child == 0 {
            alarm(10)
            _exit(seal() ? 0 : 1)
        }
        guard child > 0 else { fail("fork failed") }
        var status: Int32 = 0
        _ = waitpid(child, &status, 0)
        // Exited with 0: the low 7 bits (the signal) and the exit code are all zero.
        if status != 0 { failures.append(status) }
    }
    say("failed \(failures.count)")
    for status in failures { say("status \(status)") }
    exit(0)
}
guard arguments.count >= 3 else { fail("usage: helper COMMAND DIR …") }
let directory = URL(fileURLWithPath: arguments[2], isDirectory: true)

/// Opens the environment with LMDB directly, as another LMDB program would.
func openRawEnvironment() -> OpaquePointer {
    var env: OpaquePointer?
    guard mdb_env_create(&env) == 0, let env else { fail("mdb_env_create failed") }
    mdb_env_set_maxdbs(env, 8)
    guard mdb_env_open(env, directory.path, UInt32(MDB_NOTLS), 0o600) == 0 else { fail("mdb_env_open failed") }
    return env
}

switch arguments[1] {
case "hold-reader":
    let env = openRawEnvironment()
    var txn: OpaquePointer?
    guard mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn) == 0 else { fail("mdb_txn_begin failed") }
    say("holding")
    while true { sleep(60) }
case "hold-writer":
    let env = openRawEnvironment()
    var txn: OpaquePointer?
    guard mdb_txn_begin(env, nil, 0, &txn) == 0 else { fail("mdb_txn_begin failed") }
    say("holding")
    while true { sleep(60) }
case "set-owner":
    guard arguments.count > 4 else { fail("set-owner needs NAME MANGLED") }
    let value = Array(arguments[3].utf8) + [0] + Array(arguments[4].utf8) + [0] + Array("Moved.\(arguments[3])".utf8)
    rawPut(database: "classes", create: false, key: Array(arguments[3].utf8), value: value)
    say("done")
    exit(0)
case "open":
    do {
        let database = try LocalDatabase(directory: directory)
        let count = try await database.count()
        say("opened \(count)")
    } catch {
        say("error \(error)")
    }
    exit(0)
case "raw-put":
    // Puts KEY = VALUE into the named database DB (created if missing) with raw LMDB, as another
    // LMDB program would, without LocalLMDB's writer lock.
    guard arguments.count > 5 else { fail("raw-put needs DB KEY VALUE") }
    rawPut(database: arguments[3], create: true, key: Array(arguments[4].utf8), value: Array(arguments[5].utf8))
    say("done")
    exit(0)
case "stale-readers":
    let env = openRawEnvironment()
    var cleared: Int32 = 0
    mdb_reader_check(env, &cleared)
    say(String(cleared))
    exit(0)
case "write-deep-codable":
    guard arguments.count > 3, let length = Int(arguments[3]) else { fail("write-deep-codable needs N") }
    // Kept for the life of the process: releasing a chain this long recurses once per link.
    let chain = Unmanaged.passRetained(CodableChainLink.chain(length: length)).takeUnretainedValue()
    let database: SerializationDatabase
    do {
        database = try SerializationDatabase(directory: directory)
    } catch {
        fail("error: \(error)")
    }
    if database.write(Record(id: "deep", data: CodableDeepChain(root: chain))) {
        say("written")
    } else if case let .unencodableValue(id, path, _)? = database.lastError {
        say("unencodable \(id) \(path.count)")
    } else {
        say("error \(database.lastError.map { "\($0)" } ?? "none")")
    }
    exit(0)
default:
    break
}

/// A count shared across threads (`backup`'s progress reports).
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func increment() -> Int { lock.withLock { value += 1; return value } }
}

/// A flag shared by the tasks of `looping-readers`.
final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}

do {
    var configuration = DatabaseConfiguration()
    // HELPER_BUSY_SECONDS: a longer busy timeout, for children that wait for a long transaction of the test's.
    if let seconds = ProcessInfo.processInfo.environment["HELPER_BUSY_SECONDS"].flatMap(Int.init) {
        configuration.busyTimeout = .seconds(seconds)
    }
    if let keys = ProcessInfo.processInfo.environment["HELPER_KEYS"] {
        let parsed = try keys.split(separator: ",").map { pair in
            let parts = pair.split(separator: "=")
            guard parts.count == 2 else { fail("HELPER_KEYS: id=hex,…") }
            let hex = Array(parts[1].utf8)
            let bytes = stride(from: 0, to: hex.count - 1, by: 2).compactMap { UInt8(String(decoding: hex[$0...$0 + 1], as: UTF8.self), radix: 16) }
            return try EncryptionKey(id: String(parts[0]), bytes: bytes)
        }
        guard let current = parsed.first else { fail("HELPER_KEYS is empty") }
        configuration.encryption = DatabaseEncryption(try AESGCMCipher(current: current, previous: Array(parsed.dropFirst())))
    }
    let database = try LocalDatabase(directory: directory, configuration: configuration)
    switch arguments[1] {
    case "backup":
        guard arguments.count > 3 else { fail("backup needs DEST") }
        let stopAfter = ProcessInfo.processInfo.environment["HELPER_STOP_AFTER"].flatMap(Int.init)
        let reports = Counter()
        try await database.backup(to: URL(fileURLWithPath: arguments[3])) { progress in
            say("progress \(progress.bytesCopied)")
            if let stopAfter, reports.increment() >= stopAfter {
                while true { sleep(1) }
            }
        }
        say("done")
    case "reencrypt":
        // HELPER_STOP_AFTER=N: after N batches, waits to be killed (so that a test kills it
        // part-way whatever the load).
        let stopAfter = ProcessInfo.processInfo.environment["HELPER_STOP_AFTER"].flatMap(Int.init)
        var batches = 0
        let resealed = try await database.reencrypt(batchSize: 50) { progress in
            say("progress \(progress.recordsVisited)")
            batches += 1
            if let stopAfter, batches >= stopAfter {
                while true { sleep(1) }
            }
        }
        say("done \(resealed)")
    case "migrate-batches":
        // Never pauses, as reencrypt-batches: a test kills it upon reading a progress line.
        guard arguments.count > 3, let batchSize = Int(arguments[3]), batchSize > 0 else { fail("migrate-batches needs BATCH") }
        let done = try await database.migrate(with: MigrationWorkload.migrator(batchSize: batchSize)) { progress in
            say("progress \(progress.recordsVisited) \(progress.recordsWritten)")
        }
        say("done \(done.count)")
    case "reencrypt-batches":
        // Never pauses: a test kills it upon reading a progress line, while it has already
        // gone on to read, seal and commit the next batch.
        guard arguments.count > 3, let batchSize = Int(arguments[3]), batchSize > 0 else { fail("reencrypt-batches needs BATCH") }
        let resealed = try await database.reencrypt(batchSize: batchSize) { progress in
            say("progress \(progress.recordsVisited) \(progress.recordsReencrypted)")
        }
        say("done \(resealed)")
    case "looping-readers":
        // Tasks that loop on reads, one more than the cooperative pool has threads, beside a task
        // that runs 20 transactions; prints how long those took and how many loops ran until
        // their deadline (20 s) instead of being stopped once the transactions were done.
        try await database.write(Record(id: "r", data: Note(text: "r")))
        let stop = Flag()
        let deadline = ContinuousClock.now + .seconds(20)
        let loops = (0..<(ProcessInfo.processInfo.activeProcessorCount + 1)).map { _ in
            Task { () -> Bool in
                while !stop.isSet {
                    if ContinuousClock.now > deadline { return false }
                    let note: Note? = try await database.read(id: "r")
                    guard note?.text == "r" else { fail("read \(String(describing: note?.text))") }
                }
                return true
            }
        }
        let started = ContinuousClock.now
        for round in 0..<20 {
            try await database.startTransaction()
            try await database.write(Record(id: "t\(round)", data: Note(text: "t")))
            try await database.delete(id: "missing")
            try await database.rollbackTransaction()
        }
        let elapsed = ContinuousClock.now - started
        stop.set()
        var deadlineHit = 0
        for loop in loops where !(try await loop.value) { deadlineHit += 1 }
        say("elapsed \(elapsed.components.seconds) deadline-hit \(deadlineHit) notes \(try await database.count(Note.self))")
    case "write-loop":
        let prefix = arguments.count > 3 ? arguments[3] : "child"
        // HELPER_WRITE_LIMIT: stop writing after that many commits and wait to be killed (a test
        // whose reader is starved must not see the loop outrun the change log it keeps).
        let limit = ProcessInfo.processInfo.environment["HELPER_WRITE_LIMIT"].flatMap(Int.init) ?? .max
        var sequence = 0
        while true {
            if sequence >= limit {
                say("limit")
                while true { sleep(60) }
            }
            sequence += 1
            if sequence % 5 == 0 {
                // A transaction of several writes, acknowledged only once committed.
                try await database.startTransaction()
                var ids: [String] = []
                for part in 0..<4 {
                    let id = "\(prefix)-\(sequence)-t\(part)"
                    try await database.write(Record(id: id, data: Entry(sequence: sequence, payload: String(repeating: "x", count: 200))))
                    ids.append(id)
                }
                try await database.commitTransaction()
                say("txn " + ids.joined(separator: " "))
            } else {
                let id = "\(prefix)-\(sequence)"
                try await database.write(Record(id: id, data: Entry(sequence: sequence, payload: String(repeating: "y", count: 300))))
                say("ack \(id)")
            }
        }
    case "crash-loop":
        guard arguments.count > 3, let seed = UInt64(arguments[3]) else { fail("crash-loop needs SEED") }
        var number = 1
        while true {
            try await CrashWorkload.perform(CrashWorkload.operation(number, seed: seed), on: database)
            say("ack \(number)")
            number += 1
        }
    case "write-count":
        guard arguments.count > 4, let total = Int(arguments[4]) else { fail("write-count needs PREFIX N") }
        for sequence in 0..<total {
            try await database.write(Record(id: "\(arguments[3])-\(sequence)", data: Entry(sequence: sequence, payload: "p")))
        }
        say("done")
    case "describe":
        guard arguments.count > 3 else { fail("describe needs ID") }
        guard let person: Person = try await database.read(id: arguments[3]) else { say("missing"); break }
        var line = "\(type(of: person)) \(person.firstName) \(person.lastName)"
        if let student = person as? Student {
            line += " teacher=\(type(of: student.teacher)):\(student.teacher.firstName):\(student.teacher.salary)"
            line += " homework=\(student.homework.map { "\($0.answers):\($0.grade.map(String.init) ?? "nil")" }.joined(separator: ","))"
            line += " subjects=\(student.subjectNames.joined(separator: ","))"
        }
        say(line)
    case "write-big":
        guard arguments.count > 5, let total = Int(arguments[4]), let kilobytes = Int(arguments[5]) else { fail("write-big needs PREFIX N KB") }
        let payload = String(repeating: "b", count: kilobytes * 1024)
        for sequence in 0..<total {
            try await database.write(Record(id: "\(arguments[3])-\(sequence)", data: Entry(sequence: sequence, payload: payload)))
        }
        say("done")
    case "count":
        say(String(try await database.count(Entry.self)))
    case "write-tickets":
        guard arguments.count > 4, let total = Int(arguments[4]) else { fail("write-tickets needs QUEUE N") }
        let queue = arguments[3]
        _ = try await database.write(contentsOf: (0..<total).map { Record(id: "\(queue)-\($0)", data: Ticket(queue: queue, priority: $0, title: "from the helper")) })
        say("done")
    case "ticket-loop":
        var number = 1
        while true {
            let id = "t\(number % 50)"
            if number % 7 == 0 {
                _ = try await database.delete(id: id)
            } else if number % 5 == 0 {
                _ = try await database.write(contentsOf: (0..<3).map { part in
                    Record(id: "t\((number + part * 11) % 50)", data: Ticket(queue: "q\((number + part) % 4)", priority: number * 3 + part, title: "batch"))
                })
            } else {
                try await database.write(Record(id: id, data: Ticket(queue: "q\(number % 4)", priority: number, title: "single")))
            }
            say("ack \(number)")
            number += 1
        }
    case "count-queue":
        guard arguments.count > 3 else { fail("count-queue needs QUEUE") }
        say(String(try await database.count(Query(Ticket.self).filter("queue", .equals(arguments[3])))))
    case "read-note":
        guard arguments.count > 3 else { fail("read-note needs ID") }
        let note: Note? = try await database.read(id: arguments[3])
        say(note?.text ?? "missing")
    case "unpublish":
        // Leaves the state of a writer killed after its commit's meta page reached the file but
        // before LMDB published the transaction id in the lock file: commits Note ID, then, holding
        // LMDB's writer lock, puts the lock file's last transaction id back by one, and dies.
        guard arguments.count > 3 else { fail("unpublish needs ID") }
        try await database.write(Record(id: arguments[3], data: Note(text: "unpublished")))
        await database.close()
        let published: Int
        do { published = try unpublishLastCommit(in: directory) } catch { fail("unpublish: \(error)") }
        say("unpublished \(published)")
        kill(getpid(), SIGKILL)
    case "write-drawing":
        try await database.write(Record(id: "c", data: Circle(name: "round", radius: 2.5)))
        try await database.write(Record(id: "d", data: Drawing(shape: Circle(name: "inner", radius: 7))))
        say("done")
    case "write-codable-drawing":
        try await database.write(Record(id: "c", data: CodableCircle(name: "round", radius: 2.5)))
        try await database.write(Record(id: "d", data: CodableDrawing(shapes: [CodableShape(name: "plain"), CodableCircle(name: "inner", radius: 7)])))
        say("done")
    case "write-toolbox":
        try await database.write(Record(id: "h", data: Hammer(label: "claw", weight: 3)))
        try await database.write(Record(id: "t", data: Toolbox(tool: Hammer(label: "sledge", weight: 9))))
        say("done")
    default:
        fail("unknown command \(arguments[1])")
    }
} catch {
    fail("error: \(error)")
}

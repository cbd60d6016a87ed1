import CLMDB
import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import LocalLMDBTestSupport
import Testing

/// A fresh temporary directory, removed when `body` returns.
nonisolated(nonsending) func withTemporaryDirectory<R>(_ body: (URL) async throws -> R) async throws -> R {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("LocalLMDBTests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try await body(directory)
}

/// A database in a fresh temporary directory, removed when `body` returns.
nonisolated(nonsending) func withDatabase<R>(_ body: (LocalDatabase, URL) async throws -> R) async throws -> R {
    try await withTemporaryDirectory { directory in
        let database = try LocalDatabase(directory: directory.appendingPathComponent("db"))
        return try await body(database, directory.appendingPathComponent("db"))
    }
}

struct TimedOut: Error {}

/// Runs `body`, failing with `TimedOut` if it takes longer than `seconds`. A body that never
/// ends (a hang) is abandoned rather than awaited, so the test fails instead of hanging.
@discardableResult
func withTimeout<R: Sendable>(seconds: Double, _ body: @escaping @Sendable () async throws -> R) async throws -> R {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<R, any Error>) in
        let resumed = Locked(false)
        let finish: @Sendable (Result<R, any Error>) -> Bool = { result in
            let first = resumed.withLock { done in
                defer { done = true }
                return !done
            }
            if first { continuation.resume(with: result) }
            return first
        }
        let work = Task {
            do {
                _ = finish(.success(try await body()))
            } catch {
                _ = finish(.failure(error))
            }
        }
        Task {
            try? await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000))
            if finish(.failure(TimedOut())) { work.cancel() }
        }
    }
}

/// The test helper executable, built next to the test bundle.
var helperExecutable: URL {
    get throws {
        guard let url = executableBesideTests(named: "LocalLMDBTestHelper") else { throw HelperNotFound() }
        return url
    }
}

struct HelperNotFound: Error {}

/// Starts the helper without waiting for it; its standard output is the returned pipe.
func launchHelper(_ arguments: [String], environment: [String: String] = [:]) throws -> (process: ChildProcess, output: PipeReader) {
    let process = try ChildProcess(helperExecutable.path, arguments, environment: environment, output: .pipe)
    guard let output = process.output else { throw HelperNotFound() }
    return (process, output)
}

/// The complete lines a process wrote before it ended (a line cut short by a kill is left out).
func completeLines(of output: PipeReader) -> [Substring] {
    var lines = output.readText().split(separator: "\n", omittingEmptySubsequences: false)
    lines.removeLast()  // after the last newline: empty, or an unfinished line
    return lines
}

/// Runs the helper to completion and returns its exit status (-1 when a signal killed it) and
/// its standard output lines.
func runHelper(_ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, lines: [String]) {
    let (process, output) = try launchHelper(arguments, environment: environment)
    let text = output.readText()
    let status: Int32
    switch process.waitUntilExit() {
    case let .exit(code): status = code
    case .signal, .unknown: status = -1
    }
    return (status, text.split(separator: "\n").map(String.init))
}

/// Runs `body`, which must throw a `LocalDatabaseError` that `matches` accepts.
func expectError(
    _ matches: (LocalDatabaseError) -> Bool, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async {
    do {
        try await body()
        Issue.record("expected an error, got none", sourceLocation: sourceLocation)
    } catch let error as LocalDatabaseError {
        if !matches(error) { Issue.record("unexpected error: \(error)", sourceLocation: sourceLocation) }
    } catch {
        Issue.record("unexpected error type: \(error)", sourceLocation: sourceLocation)
    }
}

extension LocalDatabaseError {
    var isClassNameConflict: Bool {
        if case .classNameConflict = self { return true }
        return false
    }

    var isBusy: Bool {
        if case .busy = self { return true }
        return false
    }
}

/// Runs a system command quietly; true when it succeeded.
@discardableResult
func runCommand(_ path: String, _ arguments: [String]) -> Bool {
    guard let process = try? ChildProcess(path, arguments, output: .null, errors: .null) else { return false }
    return process.waitUntilExit().succeeded
}

/// Whether this process may mount file systems (root, with mount(8) present): the tests of full
/// disks and bind mounts need it, and are skipped elsewhere.
let canMount: Bool = {
    guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/bin/mount") else { return false }
    let probe = FileManager.default.temporaryDirectory.appendingPathComponent("LocalLMDB-mount-\(UUID().uuidString)")
    guard (try? FileManager.default.createDirectory(at: probe, withIntermediateDirectories: true)) != nil else { return false }
    defer { try? FileManager.default.removeItem(at: probe) }
    guard runCommand("/bin/mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", probe.path]) else { return false }
    runCommand("/bin/umount", [probe.path])
    return true
}()

/// Puts key-value pairs into a named database of `directory` with raw LMDB, as a disk fault or a
/// foreign program might. No LocalDatabase may have the directory open in this process meanwhile.
func rawPut(_ directory: URL, _ database: String, _ pairs: [([UInt8], [UInt8])], sourceLocation: SourceLocation = #_sourceLocation) {
    var env: OpaquePointer?
    #expect(mdb_env_create(&env) == 0, sourceLocation: sourceLocation)
    defer { mdb_env_close(env) }
    mdb_env_set_maxdbs(env, 8)
    #expect(mdb_env_open(env, directory.path, 0, 0o600) == 0, sourceLocation: sourceLocation)
    var txn: OpaquePointer?
    var dbi: MDB_dbi = 0
    #expect(mdb_txn_begin(env, nil, 0, &txn) == 0, sourceLocation: sourceLocation)
    #expect(mdb_dbi_open(txn, database, 0, &dbi) == 0, sourceLocation: sourceLocation)
    for (key, value) in pairs {
        var key = key
        var value = value
        key.withUnsafeMutableBytes { keyBytes in
            value.withUnsafeMutableBytes { valueBytes in
                var keyValue = MDB_val(mv_size: keyBytes.count, mv_data: keyBytes.baseAddress)
                var dataValue = MDB_val(mv_size: valueBytes.count, mv_data: valueBytes.baseAddress)
                #expect(mdb_put(txn, dbi, &keyValue, &dataValue, 0) == 0, sourceLocation: sourceLocation)
            }
        }
    }
    #expect(mdb_txn_commit(txn) == 0, sourceLocation: sourceLocation)
}

/// `body` with a read transaction of `directory`'s environment and the handle of its named
/// database `database`, with raw LMDB; nil when that database does not exist. No LocalDatabase
/// may have the directory open in this process meanwhile.
func withRawReader<R>(
    _ directory: URL, _ database: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: (OpaquePointer?, MDB_dbi) -> R?
) -> R? {
    var env: OpaquePointer?
    #expect(mdb_env_create(&env) == 0, sourceLocation: sourceLocation)
    defer { mdb_env_close(env) }
    mdb_env_set_maxdbs(env, 16)
    #expect(mdb_env_open(env, directory.path, UInt32(MDB_RDONLY), 0o600) == 0, sourceLocation: sourceLocation)
    var txn: OpaquePointer?
    var dbi: MDB_dbi = 0
    #expect(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn) == 0, sourceLocation: sourceLocation)
    defer { mdb_txn_abort(txn) }
    guard mdb_dbi_open(txn, database, 0, &dbi) == 0 else { return nil }
    return body(txn, dbi)
}

/// The value under `key` in a named database of `directory`, read with raw LMDB.
func rawGet(_ directory: URL, _ database: String, _ key: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) -> [UInt8]? {
    withRawReader(directory, database, sourceLocation: sourceLocation) { txn, dbi in
        var key = key
        return key.withUnsafeMutableBytes { keyBytes in
            var keyValue = MDB_val(mv_size: keyBytes.count, mv_data: keyBytes.baseAddress)
            var dataValue = MDB_val()
            guard mdb_get(txn, dbi, &keyValue, &dataValue) == 0 else { return nil }
            return Array(UnsafeRawBufferPointer(start: dataValue.mv_data, count: dataValue.mv_size))
        }
    }
}

/// The number of entries in a named database of `directory`, read with raw LMDB (`mdb_stat`).
func rawEntryCount(_ directory: URL, _ database: String, sourceLocation: SourceLocation = #_sourceLocation) -> Int? {
    withRawReader(directory, database, sourceLocation: sourceLocation) { txn, dbi in
        var stat = MDB_stat()
        guard mdb_stat(txn, dbi, &stat) == 0 else { return nil }
        return stat.ms_entries
    }
}

/// What `body` returns, run on a thread of its own with a stack of `stackSize` bytes: 512 KiB by
/// default, the size of the stack of Apple's secondary threads (an unoptimized build's frames
/// are several times larger than an optimized one's, so this is the harder case).
func onThread<R: Sendable>(stackSize: Int = 512 << 10, _ body: @escaping @Sendable () -> R) async -> R {
    await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: body()) }
        thread.stackSize = stackSize
        thread.start()
    }
}

/// Whether this process runs under ThreadSanitizer (`scripts/test`'s second run), whose frames
/// take several times the stack of an ordinary build.
let runningUnderThreadSanitizer: Bool = dlsym(nil, "__tsan_init") != nil

/// Checks `condition` every 2 ms until it holds, for at most `seconds`; whether it held. For
/// events seen only as state (another process's output, elements collected by a task).
func waitUntil(seconds: Double, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return condition()
}

/// Whether `condition` became true within `seconds`, checked between yields of this thread:
/// for waiting, off the cooperative pool, on state another thread changes.
func spinUntil(seconds: Double, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        sched_yield()
    }
    return condition()
}

/// What `body` gives on `database`'s writer thread, where the transaction state lives.
func onWriterThread<R: Sendable>(_ database: LocalDatabase, _ body: @escaping @Sendable (TransactionCoordinator) -> R) async -> R {
    let engine = database.session.engine
    return await withCheckedContinuation { continuation in
        engine.thread.submit { continuation.resume(returning: body(engine.coordinator)) }
    }
}

/// Waits (at most `seconds`) until `count` writes of other databases wait for a transaction
/// on `database`'s directory to end.
func waitForWaitingWrites(_ count: Int, on database: LocalDatabase, seconds: Double = 60) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if await onWriterThread(database, { $0.writesWaitingForATransaction }) >= count { return true }
        await Task.yield()
    }
    return false
}

extension FaceEngine {
    /// LMDB's session under a face: every test database but the seam's own runs on it.
    var session: Session {
        guard case let .lmdb(session) = self else { preconditionFailure("the database does not run on LMDB's engine") }
        return session
    }

    /// LMDB's engine under a face, for tests that look at its parts.
    var engine: DatabaseEngine { session.engine }
}

extension LocalDatabase {
    /// LMDB's session under the database.
    nonisolated var session: Session { engine.session }
}

/// What a test saw of a child process it watched: its complete output lines, whether the test
/// sent it SIGKILL, and how it ended.
struct WatchedRun: Sendable {
    let lines: [String]
    let killed: Bool
    let termination: ChildProcess.Termination
}

/// Reads the child's lines as they come and sends it SIGKILL upon reading the `count`th line
/// `counts` accepts (a child that does not pause has gone on meanwhile: it dies at an arbitrary
/// moment of its next step); then reads its output to the end and reaps it. Blocks: run it on a
/// thread of its own.
func killAfterLines(_ process: ChildProcess, _ output: PipeReader, count: Int, counting counts: (String) -> Bool) -> WatchedRun {
    var pending: [UInt8] = []
    var lines: [String] = []
    var counted = 0
    var killed = false
    while true {
        let chunk = output.readSome()
        if chunk.isEmpty { break }
        pending += chunk
        while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
            let line = String(decoding: pending[..<newline], as: UTF8.self)
            pending.removeSubrange(...newline)
            lines.append(line)
            guard !killed, counts(line) else { continue }
            counted += 1
            if counted >= count {
                process.send(SIGKILL)
                killed = true
            }
        }
    }
    return WatchedRun(lines: lines, killed: killed, termination: process.waitUntilExit())
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A process the tests start (the test helper, the `localdb` tool, system commands), spawned
/// with `posix_spawn`.
///
/// Why not Foundation's `Process`: on Linux, swift-corelibs-foundation's `Process.run()` lists
/// `/proc/self/fd` to close the descriptors the child would inherit, and copies 256 bytes of
/// each directory entry's name whatever its length
/// (swiftlang/swift-corelibs-foundation#5472). With the suite's hundreds of open descriptors,
/// the copy of the last entry sometimes reads past the end of mapped memory and the whole test
/// process dies with SIGSEGV (it did, in CI). Here the child closes every descriptor from 3 up
/// as it starts (`posix_spawn_file_actions_addclosefrom_np`, glibc 2.34; on Apple platforms
/// `POSIX_SPAWN_CLOEXEC_DEFAULT`), so no list is read, and no test's pipe is held open by
/// another test's child.
///
/// Thread-safe: `waitUntilExit()` may be called from any thread, any number of times.
public final class ChildProcess: @unchecked Sendable {
    /// Where one of the child's standard streams goes or comes from.
    public enum Stream: Sendable {
        /// The test process's own.
        case inherit
        /// `/dev/null`.
        case null
        /// A pipe the test reads (`output`, `errors`); not valid for standard input.
        case pipe
        /// A file: read for standard input, else created (or truncated) and written.
        case file(String)
    }

    /// How a child ended.
    public enum Termination: Sendable, Equatable {
        /// It exited with this status.
        case exit(Int32)
        /// A signal killed it.
        case signal(Int32)
        /// Its end could not be learnt (it was reaped by another part of the process).
        case unknown

        /// Whether it exited with status 0.
        public var succeeded: Bool { self == .exit(0) }
    }

    /// A spawn that failed: the call and its `errno`.
    public struct SpawnError: Error, CustomStringConvertible {
        public let call: String
        public let code: Int32
        public var description: String { "\(call) failed: \(String(cString: strerror(code)))" }
    }

    /// The child's process id.
    public let processIdentifier: pid_t
    /// The read end of the child's standard output, when it is `.pipe`.
    public let output: PipeReader?
    /// The read end of the child's standard error, when it is `.pipe`.
    public let errors: PipeReader?

    private let lock = NSLock()
    private var termination: Termination?

    /// Starts `executable` with `arguments`; `environment` is added to (and overrides) this
    /// process's environment. `closingDescriptors: false` lets the child inherit every
    /// descriptor not marked close-on-exec, as `system(3)` or a plain `posix_spawn` would: for
    /// the tests of what the library leaves open across `exec`.
    public init(
        _ executable: String, _ arguments: [String] = [], environment: [String: String] = [:],
        input: Stream = .null, output: Stream = .inherit, errors: Stream = .inherit, closingDescriptors: Bool = true
    ) throws {
        var actions = SpawnActions.empty
        try Self.check("posix_spawn_file_actions_init", posix_spawn_file_actions_init(&actions))
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = SpawnAttributes.empty
        try Self.check("posix_spawnattr_init", posix_spawnattr_init(&attributes))
        defer { posix_spawnattr_destroy(&attributes) }

        // The parent's ends of the pipes, and the child's ends (closed here once it started).
        var readEnds: [Int32?] = [nil, nil]
        var childEnds: [Int32] = []
        defer { for fd in childEnds { close(fd) } }
        do {
            for (index, (stream, target)) in [(input, Int32(0)), (output, 1), (errors, 2)].enumerated() {
                switch stream {
                case .inherit:
                    #if canImport(Darwin)
                    // POSIX_SPAWN_CLOEXEC_DEFAULT closes what is not named here, standard streams too.
                    if closingDescriptors { try Self.check("addinherit", posix_spawn_file_actions_addinherit_np(&actions, target)) }
                    #endif
                case .null:
                    try Self.check("addopen", posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_RDWR, 0))
                case let .file(path):
                    let flags = target == 0 ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC
                    try Self.check("addopen", posix_spawn_file_actions_addopen(&actions, target, path, flags, 0o600))
                case .pipe:
                    guard target != 0 else { throw SpawnError(call: "a pipe as standard input", code: EINVAL) }
                    var ends: [Int32] = [-1, -1]
                    guard pipe(&ends) == 0 else { throw SpawnError(call: "pipe", code: errno) }
                    // Close-on-exec in this process: no other spawn inherits them.
                    for fd in ends { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
                    readEnds[index - 1] = ends[0]
                    childEnds.append(ends[1])
                    try Self.check("adddup2", posix_spawn_file_actions_adddup2(&actions, ends[1], target))
                }
            }
            try Self.startClean(&attributes, closingDescriptors: closingDescriptors)
            if closingDescriptors { try Self.closeInheritedDescriptors(&actions) }

            let argumentList = [executable] + arguments
            var environmentList = ProcessInfo.processInfo.environment
            environmentList.merge(environment) { _, new in new }
            let argv = argumentList.map { strdup($0) } + [nil]
            let envp = environmentList.map { strdup("\($0.key)=\($0.value)") } + [nil]
            defer { for pointer in argv + envp { free(pointer) } }
            var pid = pid_t()
            try Self.check("posix_spawn \(executable)", posix_spawn(&pid, executable, &actions, &attributes, argv, envp))
            processIdentifier = pid
        } catch {
            for case let fd? in readEnds { close(fd) }
            throw error
        }
        self.output = readEnds[0].map(PipeReader.init)
        self.errors = readEnds[1].map(PipeReader.init)
    }

    private static func check(_ call: String, _ result: Int32) throws {
        guard result == 0 else { throw SpawnError(call: call, code: result) }
    }

    /// Starts the child with no signal blocked and every signal's default action: a test
    /// process's threads block signals (libdispatch's workers block SIGTERM, for one) and ignore
    /// some (SIGPIPE), and a child would inherit both. On Apple platforms, closing descriptors
    /// is a flag set here too (a second `setflags` would replace the first).
    private static func startClean(_ attributes: inout SpawnAttributes, closingDescriptors: Bool) throws {
        var none = sigset_t()
        sigemptyset(&none)
        try check("posix_spawnattr_setsigmask", posix_spawnattr_setsigmask(&attributes, &none))
        var all = sigset_t()
        sigfillset(&all)
        sigdelset(&all, SIGKILL)
        sigdelset(&all, SIGSTOP)
        try check("posix_spawnattr_setsigdefault", posix_spawnattr_setsigdefault(&attributes, &all))
        var flags = Int32(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)
        #if canImport(Darwin)
        if closingDescriptors { flags |= Int32(POSIX_SPAWN_CLOEXEC_DEFAULT) }
        #endif
        try check("posix_spawnattr_setflags", posix_spawnattr_setflags(&attributes, Int16(flags)))
    }

    /// Makes the child close every descriptor from 3 up as it starts (on Apple platforms:
    /// `POSIX_SPAWN_CLOEXEC_DEFAULT`, set by `startClean`).
    private static func closeInheritedDescriptors(_ actions: inout SpawnActions) throws {
        #if !canImport(Darwin)
        // Declared by glibc only under _GNU_SOURCE, which Swift's Glibc module does not define.
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else {
            throw SpawnError(call: "posix_spawn_file_actions_addclosefrom_np (glibc 2.34 or later)", code: ENOSYS)
        }
        let closeFrom = unsafeBitCast(symbol, to: CloseFrom.self)
        try check("posix_spawn_file_actions_addclosefrom_np", closeFrom(&actions, 3))
        #endif
    }

    /// Waits for the child to end (any number of times, from any thread: the same answer).
    /// The wait itself holds no lock, so `send` and `isRunning` answer meanwhile.
    @discardableResult
    public func waitUntilExit() -> Termination {
        if let ended = lock.withLock({ termination }) { return ended }
        // Until it has ended, without reaping it: only `reap`, under the lock, reaps, so that
        // `send` never signals a reaped (perhaps reused) process id.
        var info = siginfo_t()
        while waitid(P_PID, id_t(processIdentifier), &info, WEXITED | WNOWAIT) == -1 && errno == EINTR {}
        return lock.withLock {
            if let termination { return termination }
            return reap(options: 0) ?? .unknown
        }
    }

    /// Reaps the child when it has ended (`options` 0: waits until it has); nil when it has not.
    /// Called under the lock.
    private func reap(options: Int32) -> Termination? {
        var status: Int32 = 0
        while true {
            let result = waitpid(processIdentifier, &status, options)
            if result == processIdentifier {
                termination = Self.termination(status)
                return termination
            }
            if result == 0 { return nil }
            if errno != EINTR {
                // Not this process's child any more: nothing more can be learnt.
                termination = .unknown
                return termination
            }
        }
    }

    deinit {
        // A test that ended early (a thrown error) leaves no child running, nor a zombie.
        if termination == nil {
            _ = kill(processIdentifier, SIGKILL)
            _ = reap(options: 0)
        }
    }

    /// Whether the child is still running (it is reaped if it has ended).
    public var isRunning: Bool {
        lock.lock()
        defer { lock.unlock() }
        guard termination == nil else { return false }
        return reap(options: WNOHANG) == nil
    }

    /// Sends `signal` to the child (unless it has been reaped, when its id may be another's).
    public func send(_ signal: Int32) {
        lock.lock()
        defer { lock.unlock() }
        if termination == nil { _ = kill(processIdentifier, signal) }
    }

    private static func termination(_ status: Int32) -> Termination {
        // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import (they are macros).
        let signal = status & 0x7F
        return signal == 0 ? .exit((status >> 8) & 0xFF) : .signal(signal)
    }
}

// The spawn types: structs in glibc, opaque pointers on Apple platforms.
#if canImport(Darwin)
typealias SpawnActions = posix_spawn_file_actions_t?
typealias SpawnAttributes = posix_spawnattr_t?
extension Optional {
    static var empty: Wrapped? { nil }
}
#else
typealias SpawnActions = posix_spawn_file_actions_t
typealias SpawnAttributes = posix_spawnattr_t
extension posix_spawn_file_actions_t {
    static var empty: Self { Self() }
}
extension posix_spawnattr_t {
    static var empty: Self { Self() }
}
#endif

/// The test process's end of a child's output pipe. Reads block until data or the end comes.
public final class PipeReader: @unchecked Sendable {
    private let fd: Int32

    init(_ fd: Int32) {
        self.fd = fd
    }

    deinit {
        close(fd)
    }

    /// Up to `count` bytes, as soon as any are there; empty at the end (every writer closed it).
    public func readSome(upToCount count: Int = 65536) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        while true {
            let got = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, count) }
            if got >= 0 { return Array(buffer[..<got]) }
            if errno != EINTR { return [] }
        }
    }

    /// Everything until the end (every writer closed it, as when the child ended).
    public func readToEnd() -> [UInt8] {
        var all: [UInt8] = []
        while true {
            let chunk = readSome()
            if chunk.isEmpty { return all }
            all += chunk
        }
    }

    /// `readToEnd()` as UTF-8 text.
    public func readText() -> String {
        String(decoding: readToEnd(), as: UTF8.self)
    }
}

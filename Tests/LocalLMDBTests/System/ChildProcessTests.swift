import Foundation
import LocalLMDBTestSupport
import LocalLMDB
import Testing

/// The tests' process launcher (`ChildProcess`), which replaced Foundation's `Process` after
/// `Process.run()` crashed the test process in CI (it over-reads `/proc/self/fd` entries,
/// swiftlang/swift-corelibs-foundation#5472).
@Suite struct ChildProcessTests {
    /// Whether this system lists a process's descriptors in /proc (Linux).
    static let hasProcFileSystem = FileManager.default.fileExists(atPath: "/proc/self/fd")

    /// A shell command printing the shell's own descriptors (`; :` keeps a shell that would
    /// run its last command in its own place, as bash does, from doing so).
    static let listShellDescriptors = "ls /proc/$$/fd; :"

    /// Opens up to `count` descriptors (of /dev/null) for the duration of `body`: fewer when the
    /// process may hold fewer than 8 times as many, so that the other tests never run out.
    static func withOpenDescriptors<R>(_ count: Int, _ body: () throws -> R) rethrows -> R {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        let count = min(count, Int(clamping: limit.rlim_cur / 8))
        let descriptors = (0..<count).map { _ in open("/dev/null", O_RDONLY | O_CLOEXEC) }
        defer { for fd in descriptors where fd >= 0 { close(fd) } }
        return try body()
    }

    /// Descriptors above 2 are not inherited, whether close-on-exec or not: another test's child
    /// never holds a test's pipe open (its reader would wait for an end that does not come).
    @Test(.enabled(if: hasProcFileSystem)) func aChildInheritsOnlyItsStandardStreams() throws {
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)  // Not close-on-exec.
        defer { for fd in ends { close(fd) } }
        let text = try Self.withOpenDescriptors(1500) { () throws -> String in
            let child = try ChildProcess("/bin/sh", ["-c", Self.listShellDescriptors], output: .pipe)
            let text = try #require(child.output).readText()
            #expect(child.waitUntilExit() == .exit(0))
            return text
        }
        #expect(text.split(separator: "\n").sorted() == ["0", "1", "2"], "\(text)")
    }

    /// Many children started while the process holds many descriptors (the condition under which
    /// Foundation's `Process.run()` crashed) start, write and end as they should.
    @Test func childrenStartAmongManyOpenDescriptors() throws {
        try Self.withOpenDescriptors(1500) {
            for round in 0..<100 {
                let child = try ChildProcess("/bin/sh", ["-c", "echo \(round); exit \(round % 3)"], output: .pipe)
                #expect(try #require(child.output).readText() == "\(round)\n")
                #expect(child.waitUntilExit() == .exit(Int32(round % 3)))
            }
        }
    }

    /// A child starts with no signal blocked and none ignored, whatever the thread that started
    /// it blocks (libdispatch's workers block SIGTERM) or ignores (SIGPIPE): it can be stopped.
    @Test func aChildStartsWithNoSignalBlockedOrIgnored() throws {
        var blocked = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGTERM)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &blocked, &previous)
        let ignored = signal(SIGPIPE, SIG_IGN)
        // grep reports its own masks (a shell's would change as it waits for its commands).
        let reporter = Result { try ChildProcess("/bin/grep", ["-E", "^Sig(Blk|Ign)", "/proc/self/status"], output: .pipe) }
        let sleeper = Result { try ChildProcess("/bin/sleep", ["600"]) }
        signal(SIGPIPE, ignored)
        pthread_sigmask(SIG_SETMASK, &previous, nil)

        if Self.hasProcFileSystem {
            let child = try reporter.get()
            let text = try #require(child.output).readText()
            #expect(child.waitUntilExit() == .exit(0))
            // Signal n is bit n - 1 of each hexadecimal mask.
            var masks: [String: UInt64] = [:]
            for line in text.split(separator: "\n") {
                let parts = line.split(separator: ":").map { $0.trimmingCharacters(in: .whitespaces) }
                if parts.count == 2 { masks[parts[0]] = UInt64(parts[1], radix: 16) }
            }
            let bits = UInt64(1) << (SIGTERM - 1) | UInt64(1) << (SIGPIPE - 1)
            #expect(masks["SigBlk"].map { $0 & bits == 0 } == true && masks["SigIgn"].map { $0 & bits == 0 } == true, "\(text)")
        }
        // SIGTERM ends it (a blocked one would stay pending: then it is killed after 30 s).
        let stopped = try sleeper.get()
        stopped.send(SIGTERM)
        let deadline = ContinuousClock.now + .seconds(30)
        while stopped.isRunning && ContinuousClock.now < deadline { usleep(1000) }
        stopped.send(SIGKILL)
        #expect(stopped.waitUntilExit() == .signal(SIGTERM))
    }

    @Test func aKilledChildReportsItsSignal() throws {
        let child = try ChildProcess("/bin/sleep", ["600"])
        #expect(child.isRunning)
        child.send(SIGKILL)
        #expect(child.waitUntilExit() == .signal(SIGKILL))
        #expect(!child.isRunning)
        #expect(child.waitUntilExit() == .signal(SIGKILL))  // Asked again: the same answer.
    }

    @Test func inputAndOutputFilesAndTheEnvironment() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("child-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("in").path
        let output = directory.appendingPathComponent("out").path
        try Data("from a file\n".utf8).write(to: URL(fileURLWithPath: input))
        let child = try ChildProcess(
            "/bin/sh", ["-c", #"read line; echo "$line, $CHILD_VALUE"; echo oops >&2"#], environment: ["CHILD_VALUE": "a 'value'"],
            input: .file(input), output: .file(output), errors: .pipe)
        #expect(try #require(child.errors).readText() == "oops\n")
        #expect(child.waitUntilExit().succeeded)
        #expect(try String(contentsOfFile: output, encoding: .utf8) == "from a file, a 'value'\n")
        #expect(throws: ChildProcess.SpawnError.self) { try ChildProcess(directory.appendingPathComponent("missing").path) }
    }

    /// LMDB leaves its data file open across `exec`: a program that opened a database and then
    /// started any process (without closing every descriptor, as `system(3)` does not) had that
    /// process hold the file open and writable for its whole life.
    @Test(.enabled(if: hasProcFileSystem)) func aChildDoesNotInheritAnOpenDatabasesFiles() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("child-db-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try LocalDatabase(directory: directory)
        try await database.write(Record(id: "n", data: Note(text: "open")))
        let child = try ChildProcess("/bin/sh", ["-c", "ls -l /proc/$$/fd; :"], output: .pipe, closingDescriptors: false)
        let listing = try #require(child.output).readText()
        #expect(child.waitUntilExit() == .exit(0))
        #expect(listing.contains("/dev/null"))  // It lists the child's descriptors.
        #expect(!listing.contains(directory.lastPathComponent), "\(listing)")
        await database.close()
    }
}

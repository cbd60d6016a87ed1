import Foundation
import LocalLMDBTestSupport
import LocalLMDB
import Testing

/// The tests' process launcher (`ChildProcess`), which replaced Foundation's `Process` after
/// `Process.run()` crashed the test process in CI (it over-reads `/proc/self/fd` entries,
/// swiftlang/swift-corelibs-foundation#5472).
@Suite struct ChildProcessTests {
    /// Opens `count` descriptors (of /dev/null) for the duration of `body`.
    static func withOpenDescriptors<R>(_ count: Int, _ body: () throws -> R) rethrows -> R {
        let descriptors = (0..<count).map { _ in open("/dev/null", O_RDONLY | O_CLOEXEC) }
        defer { for fd in descriptors where fd >= 0 { close(fd) } }
        return try body()
    }

    /// Descriptors above 2 are not inherited, whether close-on-exec or not: another test's child
    /// never holds a test's pipe open (its reader would wait for an end that does not come).
    @Test func aChildInheritsOnlyItsStandardStreams() throws {
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)  // Not close-on-exec.
        defer { for fd in ends { close(fd) } }
        let text = try Self.withOpenDescriptors(1500) { () throws -> String in
            let child = try ChildProcess("/bin/sh", ["-c", "ls /proc/$$/fd"], output: .pipe)
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
    @Test func aChildDoesNotInheritAnOpenDatabasesFiles() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("child-db-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try LocalDatabase(directory: directory)
        try await database.write(Record(id: "n", data: Note(text: "open")))
        let child = try ChildProcess("/bin/sh", ["-c", "ls -l /proc/$$/fd"], output: .pipe, closingDescriptors: false)
        let listing = try #require(child.output).readText()
        #expect(child.waitUntilExit() == .exit(0))
        #expect(listing.contains("/dev/null"))  // It lists the child's descriptors.
        #expect(!listing.contains(directory.lastPathComponent), "\(listing)")
        await database.close()
    }
}

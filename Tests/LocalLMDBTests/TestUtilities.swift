import Foundation
import LocalLMDB
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

/// Runs `body`, failing with `TimedOut` if it takes longer than `seconds`.
@discardableResult
func withTimeout<R: Sendable>(seconds: Double, _ body: @escaping @Sendable () async throws -> R) async throws -> R {
    try await withThrowingTaskGroup(of: R.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000))
            throw TimedOut()
        }
        guard let result = try await group.next() else { throw TimedOut() }
        group.cancelAll()
        return result
    }
}

/// The test helper executable, built next to the test bundle.
var helperExecutable: URL {
    get throws {
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
            Bundle.main.bundleURL.deletingLastPathComponent(),
            Bundle.main.bundleURL,
        ]
        for directory in candidates {
            let url = directory.appendingPathComponent("LocalLMDBTestHelper")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        throw HelperNotFound()
    }
}

struct HelperNotFound: Error {}

/// Starts the helper without waiting for it; its standard output is the returned pipe.
func launchHelper(_ arguments: [String]) throws -> (process: Process, output: Pipe) {
    let process = Process()
    process.executableURL = try helperExecutable
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    return (process, output)
}

/// The complete lines a process wrote before it ended (a line cut short by a kill is left out).
func completeLines(of output: Pipe) -> [Substring] {
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    lines.removeLast()  // after the last newline: empty, or an unfinished line
    return lines
}

/// Runs the helper to completion and returns its standard output lines.
func runHelper(_ arguments: [String]) throws -> (status: Int32, lines: [String]) {
    let (process, output) = try launchHelper(arguments)
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let lines = String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    return (process.terminationStatus, lines)
}

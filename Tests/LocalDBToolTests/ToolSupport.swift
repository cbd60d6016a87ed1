import Foundation
import LocalLMDBTestSupport
import Testing

/// A new temporary directory for `body`, removed afterwards.
func withTemporaryDirectory<R>(_ body: (URL) async throws -> R) async throws -> R {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("localdb-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try await body(directory)
}

struct ToolNotFound: Error {}

/// The `localdb` executable, built next to the test bundle.
var toolExecutable: URL {
    get throws {
        guard let url = executableBesideTests(named: "localdb") else { throw ToolNotFound() }
        return url
    }
}

/// What a run of the tool printed, and its exit status.
struct ToolRun {
    let status: Int32
    let output: Data
    let errors: String
    var text: String { String(decoding: output, as: UTF8.self) }
    var lines: [String] { text.split(separator: "\n").map(String.init) }
}

/// Runs `localdb` with `arguments` to its end, with `input` as its standard input; its output
/// and errors go to files (no pipe can fill and stall it).
func runTool(_ arguments: [String], input: URL? = nil) throws -> ToolRun {
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("localdb-run-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: scratch) }
    let out = scratch.appendingPathComponent("out")
    let err = scratch.appendingPathComponent("err")
    _ = FileManager.default.createFile(atPath: out.path, contents: nil)
    _ = FileManager.default.createFile(atPath: err.path, contents: nil)
    let process = try ChildProcess(
        toolExecutable.path, arguments, input: input.map { .file($0.path) } ?? .null, output: .file(out.path), errors: .file(err.path))
    let status: Int32
    switch process.waitUntilExit() {
    case let .exit(code): status = code
    case let .signal(signal): status = 128 + signal
    case .unknown: status = -1
    }
    return ToolRun(
        status: status, output: try Data(contentsOf: out),
        errors: String(decoding: try Data(contentsOf: err), as: UTF8.self))
}

import BenchmarkCore
import Foundation
import LocalLMDB
import LocalLMDBPostgres
import PostgresNIO

// Many processes writing one store at once (issue 40's "many devices on one server"): N child
// processes of this executable each write one record per transaction, in a loop, for the same
// few seconds, to one `PostgresStore`; against N children doing the same writes as hand-written
// postgres-nio statements (an upsert of (id, JSON) in a table, one statement a transaction).
//
//   PostgresComparison writer store|raw NAME START SECONDS
//
// A child connects, makes one write, waits until START (seconds since 1970), writes until
// START + SECONDS and prints the number of writes it made after START.

/// Runs a child, when the arguments ask for one; otherwise returns.
func runWriterChildIfAsked() async throws {
    let arguments = CommandLine.arguments
    guard arguments.count == 6, arguments[1] == "writer", let start = Double(arguments[4]), let duration = Double(arguments[5]) else { return }
    let name = arguments[3]
    let process = ProcessInfo.processInfo.processIdentifier
    var count = 0
    func waitForStart() async throws {
        let wait = start - Date().timeIntervalSince1970
        if wait > 0 { try await Task.sleep(for: .milliseconds(Int(wait * 1000))) }
    }
    if arguments[2] == "store" {
        let store = try await PostgresStore(configuration: configuration, name: name, connections: 1)
        try await store.write(Record(id: "warm-\(process)", data: BenchStudent(index: 0)))
        try await waitForStart()
        while Date().timeIntervalSince1970 < start + duration {
            try await store.write(Record(id: "p\(process)-\(count % 1000)", data: BenchStudent(index: count)))
            count += 1
        }
        await store.close()
    } else {
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
        let encoder = JSONEncoder()
        let table = name
        func write(_ id: String, _ index: Int) async throws {
            let data = ByteBuffer(data: try encoder.encode(BenchCodableStudent(index: index)))
            try await connection.query(
                PostgresQuery(
                    unsafeSQL: "INSERT INTO \(table) (id, data) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET data = EXCLUDED.data",
                    binds: { var binds = PostgresBindings(); binds.append(id); binds.append(data); return binds }()),
                logger: logger)
        }
        try await write("warm-\(process)", 0)
        try await waitForStart()
        while Date().timeIntervalSince1970 < start + duration {
            try await write("p\(process)-\(count % 1000)", count)
            count += 1
        }
        try await connection.close()
    }
    print(count)
    exit(0)
}

/// Writes per second of `processes` children of `kind` ("store" or "raw") writing for `seconds`.
func concurrentWrites(_ kind: String, processes: Int, seconds: Double) async throws -> Double {
    let name: String
    if kind == "store" {
        name = "bench-concurrent-" + UUID().uuidString
        let store = try await PostgresStore(configuration: configuration, name: name)
        await store.close()
    } else {
        name = "bench_concurrent_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
        try await connection.query(PostgresQuery(unsafeSQL: "CREATE TABLE \(name) (id text PRIMARY KEY, data bytea NOT NULL)"), logger: logger)
        try await connection.close()
    }
    // Children start together, once every one has had time to connect.
    let start = Date().timeIntervalSince1970 + 2 + Double(processes) * 0.2
    let executable = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
    var children: [(Process, Pipe)] = []
    for _ in 0..<processes {
        let process = Process()
        process.executableURL = executable
        process.arguments = ["writer", kind, name, String(start), String(seconds)]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        children.append((process, pipe))
    }
    var total = 0
    for (process, pipe) in children {
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0, let count = Int(String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw BenchFailure(reason: "a \(kind) writer ended with status \(process.terminationStatus)")
        }
        total += count
    }
    if kind == "raw" {
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
        try await connection.query(PostgresQuery(unsafeSQL: "DROP TABLE \(name)"), logger: logger)
        try await connection.close()
    }
    return Double(total) / seconds
}

struct BenchFailure: Error, CustomStringConvertible {
    let reason: String
    var description: String { reason }
}

import BenchmarkCore
import Foundation

// The side-by-side comparison: LocalLMDB (with hand-written and with Codable models), SwiftLocal's
// design on SQLite, idiomatic GRDB and raw LMDB, on the same objects and ids, in one run. Prints a
// table and writes it, with an SVG chart, to the results folder.
//
//   comparison [--records N] [--repetitions R] [--results DIR] [--only CONTENDER[,CONTENDER…]] [--workload PREFIX]
//
// --only (repeatable, or names separated by commas) and --workload restrict the run (for
// profiling); the report then covers only what ran.

var recordCount = 10_000
var repetitions = 5
var resultsDirectory = URL(fileURLWithPath: "results", isDirectory: true)
var onlyContenders: [String] = []
var onlyWorkload: String?
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--records": recordCount = arguments.popFirst().flatMap(Int.init) ?? recordCount
    case "--repetitions": repetitions = arguments.popFirst().flatMap(Int.init) ?? repetitions
    case "--results": resultsDirectory = URL(fileURLWithPath: arguments.popFirst() ?? "results", isDirectory: true)
    case "--only": onlyContenders += (arguments.popFirst() ?? "").split(separator: ",").map(String.init)
    case "--workload": onlyWorkload = arguments.popFirst()
    default:
        print("usage: comparison [--records N] [--repetitions R] [--results DIR] [--only CONTENDER[,CONTENDER…]] [--workload PREFIX]")
        exit(2)
    }
}

func log(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

let allContenders: [any Contender.Type] = [
    LocalLMDBContender.self, LocalLMDBCodableContender.self, SwiftLocalOnSQLite.self, GRDBCodable.self, RawLMDB.self,
]
let contenderTypes = allContenders.filter { onlyContenders.isEmpty || onlyContenders.contains($0.name) }
if let unknown = onlyContenders.first(where: { name in !allContenders.contains { $0.name == name } }) {
    print("unknown contender \"\(unknown)\"; the contenders are: \(allContenders.map { "\"\($0.name)\"" }.joined(separator: ", "))")
    exit(2)
}
// The Codable contender stores the same Student data as the hand-written one.
for index in [0, 1, 42, 996, 997, 9_999, 123_457] where !Fixture.codableMatchesHandWritten(index: index) {
    print("the Codable student \(index) differs from the hand-written one")
    exit(1)
}
let ids = Fixture.ids(recordCount)
let workloads = Workloads.standard(count: recordCount).filter { onlyWorkload.map($0.name.hasPrefix) ?? true }
var results: [Result] = []
var notes: [String] = []

func open(_ type: any Contender.Type, prepared count: Int) throws -> (any Contender, URL) {
    let directory = try Fixture.temporaryDirectory(type.name.replacingOccurrences(of: " ", with: "-"))
    let store = try type.init(directory: directory)
    if let raw = store as? RawLMDB { raw.prepare(count: count) }
    return (store, directory)
}

// Every contender is set up first; then each repetition of a workload runs every contender in
// turn, so that a slow spell of this shared machine slows them all alike rather than one.
var stores: [(type: any Contender.Type, store: any Contender, directory: URL)] = []
for type in contenderTypes {
    log("setting up \(type.name)…")
    let (store, directory) = try open(type, prepared: recordCount)
    if let sqlite = store as? SwiftLocalOnSQLite { notes.append("SwiftLocal on SQLite: PRAGMA synchronous = \(try sqlite.synchronousSetting()) (2 = FULL)") }
    if let grdb = store as? GRDBCodable { notes.append("GRDB Codable: PRAGMA synchronous = \(try grdb.synchronousSetting()) (2 = FULL)") }
    try await store.writeBatch(ids: ids, firstIndex: 0)
    stores.append((type, store, directory))
}

for workload in workloads {
    var seconds = Array(repeating: [Double](), count: stores.count)
    for _ in 0..<repetitions {
        let order = ids.shuffled()
        for (index, entry) in stores.enumerated() {
            var target = entry.store
            var scratch: URL?
            if workload.needsEmptyStore {
                let fresh = try open(entry.type, prepared: recordCount)
                target = fresh.0
                scratch = fresh.1
            }
            let clock = ContinuousClock()
            let elapsed = try await clock.measure { try await workload.run(target, order) }
            seconds[index].append(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
            if let scratch { try? FileManager.default.removeItem(at: scratch) }
        }
    }
    for (index, entry) in stores.enumerated() {
        let result = Result(workload: workload.name, unit: workload.unit, contender: entry.type.name, operations: workload.operations, seconds: seconds[index])
        log(String(format: "  %-20@ %-32@ best %10.0f/s  median %10.0f/s", entry.type.name, workload.name, result.bestRate, result.medianRate))
        results.append(result)
    }
}

let directories = stores.map(\.directory)
stores.removeAll()  // close every store before removing its files
for directory in directories { try? FileManager.default.removeItem(at: directory) }

let machine = "\(ProcessInfo.processInfo.activeProcessorCount) cores, \(ProcessInfo.processInfo.physicalMemory >> 30) GiB, \(ProcessInfo.processInfo.operatingSystemVersionString)"
let formatter = ISO8601DateFormatter()
let header = """
## LocalLMDB comparison

\(recordCount) objects of ~300 bytes of JSON, UUID ids, best (median) of \(repetitions) repetitions; durable writes use each store's full durability.
Machine: \(machine). Date: \(formatter.string(from: Date())). Command: `scripts/main-job`.
\(notes.map { "- " + $0 }.joined(separator: "\n"))
"""
// The Codable row's own ratios: against the hand-written models and against GRDB's Codable records.
let variants = [(contender: LocalLMDBCodableContender.name, against: [LocalLMDBContender.name, GRDBCodable.name])]
let report = Report(results: results, contenders: contenderTypes.map { $0.name }, header: header, variants: variants)
print(report.markdown)
try FileManager.default.createDirectory(at: resultsDirectory, withIntermediateDirectories: true)
try report.markdown.write(to: resultsDirectory.appendingPathComponent("latest.md"), atomically: true, encoding: .utf8)
try report.svg.write(to: resultsDirectory.appendingPathComponent("latest.svg"), atomically: true, encoding: .utf8)
log("Wrote \(resultsDirectory.path)/latest.md and latest.svg")

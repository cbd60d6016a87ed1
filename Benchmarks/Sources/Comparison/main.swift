import BenchmarkCore
import Foundation

// The side-by-side comparison: LocalLMDB (with hand-written and with Codable models), SwiftLocal's
// design on SQLite, idiomatic GRDB and raw LMDB, on the same objects and ids, in one run, for a
// Student of ~300 bytes of JSON and a wide Order of ~800. Prints a table per model, with each
// store's size on disk and the memory of reading every object, and writes them, with an SVG
// chart, to the results folder.
//
//   comparison [--records N] [--repetitions R] [--results DIR] [--model student|wide|both]
//              [--only CONTENDER[,CONTENDER…]] [--workload PREFIX] [--query-records N[,N…]]
//              [--migration-records N[,N…]]
//
// The query workload (indexes against reading everything, GRDB and raw LMDB) runs over
// --query-records orders (100,000 and 1,000,000 by default; 0 skips it); --workload queries runs it alone.
//
// The migration workload (`migrate(with:)` against a hand-written loop) runs over --migration-records
// records (100,000 and 1,000,000 by default; 0 skips it); --workload migration runs it alone.
//
// --only (repeatable, or names separated by commas) and --workload restrict the run (for
// profiling); the report then covers only what ran.

let usage = "usage: comparison [--records N] [--repetitions R] [--results DIR] [--model student|wide|both] "
    + "[--only CONTENDER[,CONTENDER…]] [--workload PREFIX] [--query-records N[,N…]] [--migration-records N[,N…]]"
var recordCount = 10_000
var repetitions = 5
var resultsDirectory = URL(fileURLWithPath: "results", isDirectory: true)
var models = BenchModel.allCases
var onlyContenders: [String] = []
var onlyWorkload: String?
var queryRecords = [100_000, 1_000_000]
var migrationRecords = [100_000, 1_000_000]
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--records": recordCount = arguments.popFirst().flatMap(Int.init) ?? recordCount
    case "--repetitions": repetitions = arguments.popFirst().flatMap(Int.init) ?? repetitions
    case "--results": resultsDirectory = URL(fileURLWithPath: arguments.popFirst() ?? "results", isDirectory: true)
    case "--model":
        let name = arguments.popFirst() ?? ""
        guard name == "both" || BenchModel(rawValue: name) != nil else {
            print(usage)
            exit(2)
        }
        models = name == "both" ? BenchModel.allCases : [BenchModel(rawValue: name)!]
    case "--only": onlyContenders += (arguments.popFirst() ?? "").split(separator: ",").map(String.init)
    case "--workload": onlyWorkload = arguments.popFirst()
    case "--query-records": queryRecords = (arguments.popFirst() ?? "").split(separator: ",").compactMap { Int($0) }.filter { $0 > 0 }
    case "--migration-records":
        migrationRecords = (arguments.popFirst() ?? "").split(separator: ",").compactMap { Int($0) }.filter { $0 > 0 }
    default:
        print(usage)
        exit(2)
    }
}
// The durable-write workloads write the first 400 ids.
guard recordCount >= 400 else {
    print("--records must be at least 400")
    exit(2)
}

let allContenders: [any Contender.Type] = [
    LocalLMDBHandWrittenContender.self, LocalLMDBCodableContender.self, LocalLMDBTypedContender.self, LocalLMDBEncryptedContender.self,
    SwiftLocalOnSQLite.self,
    GRDBCodable.self, RawLMDB.self,
]
let contenderTypes = allContenders.filter { onlyContenders.isEmpty || onlyContenders.contains($0.name) }
if let unknown = onlyContenders.first(where: { name in !allContenders.contains { $0.name == name } }) {
    print("unknown contender \"\(unknown)\"; the contenders are: \(allContenders.map { "\"\($0.name)\"" }.joined(separator: ", "))")
    exit(2)
}
// The Codable contender stores the same data as the hand-written one.
for model in models {
    for index in [0, 1, 42, 996, 997, 9_999, 123_457] where !Fixture.codableMatchesHandWritten(index: index, model: model) {
        print("the Codable \(model.rawValue) object \(index) differs from the hand-written one")
        exit(1)
    }
    // The macro'd contender stores the Codable one's bytes.
    for index in [0, 1, 42, 996, 997, 9_999, 123_457] where !Fixture.typedMatchesCodable(index: index, model: model) {
        print("the @StoredModel \(model.rawValue) object \(index) stores other bytes than the Codable one:")
        print(Fixture.storedJSON(typed: true, index: index, model: model))
        print(Fixture.storedJSON(typed: false, index: index, model: model))
        exit(1)
    }
}
let ids = Fixture.ids(recordCount)
let workloads = Workloads.standard(count: recordCount).filter { onlyWorkload.map($0.name.hasPrefix) ?? true }
// The Codable row's own ratios: against the hand-written models and against GRDB's Codable records.
// The macro'd row's: against the hand-written and the Codable models (the generated coding's cost).
// The encrypted row's: against the same models unencrypted (the cost of encryption).
let variants = [
    (contender: LocalLMDBCodableContender.name, against: [LocalLMDBHandWrittenContender.name, GRDBCodable.name]),
    (contender: LocalLMDBTypedContender.name, against: [LocalLMDBHandWrittenContender.name, LocalLMDBCodableContender.name]),
    (contender: LocalLMDBEncryptedContender.name, against: [LocalLMDBHandWrittenContender.name]),
]
var sections: [String] = []
var reports: [Report] = []
var notes: [String] = []

for model in models where onlyWorkload != "queries" && onlyWorkload != "migration" {
    let outcome = try await ModelRun(
        model: model, ids: ids, contenderTypes: contenderTypes, workloads: workloads, repetitions: repetitions
    ).run()
    let jsonBytes = model.meanJSONBytes(of: recordCount)
    let heading = "### \(model.title): \(model.shape); \(Int(jsonBytes.rounded())) bytes of JSON on average"
    let report = Report(
        results: outcome.results, contenders: contenderTypes.map { $0.name }, header: heading, variants: variants,
        chartTitle: "\(model.title), \(Int(jsonBytes.rounded())) bytes of JSON")
    reports.append(report)
    sections.append(report.markdown + "\n" + FootprintReport(footprints: outcome.footprints, objects: recordCount).markdown)
    notes += outcome.notes.filter { !notes.contains($0) }
}

let machine = "\(ProcessInfo.processInfo.activeProcessorCount) cores, \(ProcessInfo.processInfo.physicalMemory >> 30) GiB, \(ProcessInfo.processInfo.operatingSystemVersionString)"
let formatter = ISO8601DateFormatter()
var scale: [String] = []
if Workloads.readByIDOperations(count: recordCount) < recordCount {
    scale.append("Read by id reads \(Workloads.readByIDOperations(count: recordCount)) of the \(recordCount) ids a repetition: a random sample, the same for every contender.")
}
if Workloads.countOperations(count: recordCount) != 1000 {
    scale.append("Count of a type counts \(Workloads.countOperations(count: recordCount)) times a repetition.")
}
let header = """
## LocalLMDB comparison

\(recordCount) objects of each model (\(models.map(\.title).joined(separator: ", "))), UUID ids, best (median) of \(repetitions) repetitions; durable writes use each store's full durability.
\(scale.map { $0 + "\n" }.joined())Machine: \(machine). Date: \(formatter.string(from: Date())). Command: `scripts/main-job`.\(notes.map { "\n- " + $0 }.joined())
"""
if onlyWorkload.map({ "queries".hasPrefix($0) }) ?? true, !queryRecords.isEmpty, onlyContenders.isEmpty {
    sections.append("### Queries\n\n" + (try await QueryBench.run(counts: queryRecords, repetitions: repetitions, log: log)))
}
if onlyWorkload.map({ "migration".hasPrefix($0) }) ?? true, !migrationRecords.isEmpty, onlyContenders.isEmpty {
    sections.append("### Migrations\n\n" + (try await MigrationBench.run(counts: migrationRecords, repetitions: min(repetitions, 3), log: log)))
}
if onlyWorkload.map({ "references".hasPrefix($0) }) ?? true, onlyContenders.isEmpty {
    sections.append("### References\n\n" + (try await ReferenceBench.run(households: 10_000, repetitions: repetitions, log: log)))
}
let markdown = header + "\n\n" + sections.joined(separator: "\n")
print(markdown)
try FileManager.default.createDirectory(at: resultsDirectory, withIntermediateDirectories: true)
// A run restricted to some contenders, workloads or one model writes `partial.md` and `partial.svg`:
// `latest.md` holds the last full run, which the README's table is made from.
let name = onlyContenders.isEmpty && onlyWorkload == nil && models.count == BenchModel.allCases.count ? "latest" : "partial"
try markdown.write(to: resultsDirectory.appendingPathComponent("\(name).md"), atomically: true, encoding: .utf8)
try Report.svg(reports).write(to: resultsDirectory.appendingPathComponent("\(name).svg"), atomically: true, encoding: .utf8)
log("Wrote \(resultsDirectory.path)/\(name).md and \(name).svg")

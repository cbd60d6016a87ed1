import Benchmark
import BenchmarkCore
import Foundation
import LocalLMDB

// Tracked benchmarks: time and allocations of LocalLMDB's hot paths, checked against the static
// thresholds in Benchmarks/Thresholds (`swift package benchmark thresholds check`).

/// A database of `recordCount` students, built once by a setup hook and shared by the read
/// benchmarks. Written by the setup hook before any benchmark closure runs, read-only after.
final class SharedDatabase: @unchecked Sendable {
    static let shared = SharedDatabase()
    static let recordCount = 10_000
    var database: LocalDatabase?
    var ids: [String] = []
    var directory: URL?

    func open() async throws {
        guard database == nil else { return }
        let directory = try Fixture.temporaryDirectory("tracked")
        let database = try LocalDatabase(directory: directory)
        ids = Fixture.ids(Self.recordCount)
        try await database.write(contentsOf: ids.enumerated().map { Record(id: $0.element, data: BenchStudent(index: $0.offset)) })
        self.database = database
        self.directory = directory
    }
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .throughput],
        maxDuration: .seconds(2),
        maxIterations: 1_000_000
    )

    let sample = BenchStudent(index: 42)
    let json = sample.toDataObject().toRawString() ?? "{}"

    Benchmark("Codec: encode a student (~300 B of JSON)", configuration: .init(scalingFactor: .kilo)) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(sample.toDataObject().rawData)
        }
    }

    Benchmark("Codec: decode a student (~300 B of JSON)", configuration: .init(scalingFactor: .kilo)) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(BenchStudent(dataObject: DataObject(rawString: json)))
        }
    }

    Benchmark(
        "LocalLMDB: read by id",
        configuration: .init(scalingFactor: .kilo, setup: { try await SharedDatabase.shared.open() })
    ) { benchmark in
        let shared = SharedDatabase.shared
        guard let database = shared.database else { return }
        for iteration in benchmark.scaledIterations {
            let student: BenchStudent? = try await database.read(id: shared.ids[iteration * 7 % shared.ids.count])
            blackHole(student)
        }
    }

    Benchmark(
        "LocalLMDB: read all 10,000 of a type",
        configuration: .init(setup: { try await SharedDatabase.shared.open() })
    ) { benchmark in
        guard let database = SharedDatabase.shared.database else { return }
        let students: [BenchStudent] = try await database.read()
        blackHole(students)
    }

    Benchmark(
        "LocalLMDB: count of a type",
        configuration: .init(scalingFactor: .kilo, setup: { try await SharedDatabase.shared.open() })
    ) { benchmark in
        guard let database = SharedDatabase.shared.database else { return }
        for _ in benchmark.scaledIterations {
            blackHole(try await database.count(BenchStudent.self))
        }
    }

    Benchmark("LocalLMDB: batch write of 1,000 in one transaction", configuration: .init(maxIterations: 50)) { benchmark in
        let directory = try Fixture.temporaryDirectory("batch")
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try LocalDatabase(directory: directory)
        let records = (0..<1000).map { Record(id: UUID().uuidString, data: BenchStudent(index: $0)) }
        benchmark.startMeasurement()
        try await database.write(contentsOf: records)
        benchmark.stopMeasurement()
    }
}

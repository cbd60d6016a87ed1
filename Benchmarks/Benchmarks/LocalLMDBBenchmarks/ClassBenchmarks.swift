import Benchmark
import BenchmarkCore
import Foundation
import LocalLMDB

// New class names written in one transaction: each name new to the database is recorded, and
// checked against the stored names by the spelling rule. The time per class must not grow with
// the classes already stored: 100,000 classes take about ten times 10,000 (compare the two
// benchmarks' time divided by their counts).

/// Generic models, each instantiation a class name of its own (`ClassOne<ClassNought<ClassZero>>`…).
protocol ClassMarker: Codable, Persistable { init() }
struct ClassZero: ClassMarker { var n = 0 }
struct ClassNought<Tail: ClassMarker>: ClassMarker { var n = 0 }
struct ClassOne<Tail: ClassMarker>: ClassMarker { var n = 1 }

enum ClassFamily {
    /// The type for `index` (< 2^17): its bits, spelt in nested generics.
    static func type(_ index: Int) -> any ClassMarker.Type {
        func nought<T: ClassMarker>(_ type: T.Type) -> any ClassMarker.Type { ClassNought<T>.self }
        func one<T: ClassMarker>(_ type: T.Type) -> any ClassMarker.Type { ClassOne<T>.self }
        var type: any ClassMarker.Type = ClassZero.self
        for bit in 0..<17 { type = index >> bit & 1 == 0 ? nought(type) : one(type) }
        return type
    }

    /// Writes one model of `type` under `id` (the existential opened).
    static func write(_ type: any ClassMarker.Type, id: String, to database: LocalDatabase) async throws {
        func write<T: ClassMarker>(_ type: T.Type) async throws { try await database.write(Record(id: id, data: T())) }
        try await write(type)
    }
}

func classBenchmarks() {
    for count in [10_000, 100_000] {
        Benchmark(
            "Classes.newInOneTransaction\(count)",
            configuration: .init(metrics: [.wallClock], maxDuration: .seconds(30), maxIterations: 3)
        ) { benchmark in
            let types = (0..<count).map(ClassFamily.type)
            for _ in benchmark.scaledIterations {
                let directory = try Fixture.temporaryDirectory("classes-\(count)")
                let database = try LocalDatabase(directory: directory)
                benchmark.startMeasurement()
                try await database.startTransaction()
                for (index, type) in types.enumerated() { try await ClassFamily.write(type, id: "c\(index)", to: database) }
                try await database.commitTransaction()
                benchmark.stopMeasurement()
                await database.close()
                try? FileManager.default.removeItem(at: directory)
            }
        }
    }
}

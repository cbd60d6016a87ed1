import Benchmark
import BenchmarkCore
import Foundation
import LocalLMDBModels

// The student as a macro'd model (`@StoredModel`), beside the hand-written `Storable` one
// (`Codec.*Student300B`, `LocalLMDB.readByID`, `LocalLMDB.batchWrite1000`, `LocalLMDB.readAll10000`)
// and the `Codable` one (`*Codable*`): the same fields, stored as the `Codable` one stores them.

@StoredValue
struct TypedAddress: Sendable {
    var street: String
    var city: String
    var postcode: String
}

@StoredModel
struct TypedStudent: Sendable {
    var firstName: String
    var lastName: String
    var email: String
    var age: Int
    var enrolmentYear: Int
    var gpa: Double
    var subjects: [String]
    var address: TypedAddress

    init(index: Int) {
        let codable = BenchCodableStudent(index: index)
        (firstName, lastName, email) = (codable.firstName, codable.lastName, codable.email)
        (age, enrolmentYear, gpa, subjects) = (codable.age, codable.enrolmentYear, codable.gpa, codable.subjects)
        address = TypedAddress(street: codable.address.street, city: codable.address.city, postcode: codable.address.postcode)
    }
}

extension SharedDatabase {
    static let typed = SharedDatabase(name: "tracked-typed") { ids, database in
        try await database.write(contentsOf: ids.enumerated().map { Record(id: $0.element, data: TypedStudent(index: $0.offset)) })
    }
}

func typedModelBenchmarks() {
    let sample = TypedStudent(index: 42)
    let json = (try? sample._storedFields().toRawString()) ?? "{}"

    Benchmark("Codec.encodeTypedStudent300B", configuration: .init(scalingFactor: .kilo)) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try sample._storedFields().rawData)
        }
    }

    Benchmark("Codec.decodeTypedStudent300B", configuration: .init(scalingFactor: .kilo)) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try TypedStudent._restore(from: DataObject(rawString: json)))
        }
    }

    Benchmark(
        "LocalLMDB.readByIDTyped",
        configuration: .init(scalingFactor: .kilo, setup: { try await SharedDatabase.typed.open() })
    ) { benchmark in
        let shared = SharedDatabase.typed
        guard let database = shared.database else { return }
        for iteration in benchmark.scaledIterations {
            let student: TypedStudent? = try await database.read(id: shared.ids[iteration * 7 % shared.ids.count])
            blackHole(student)
        }
    }

    Benchmark(
        "LocalLMDB.readAll10000Typed",
        configuration: .init(setup: { try await SharedDatabase.typed.open() })
    ) { benchmark in
        guard let database = SharedDatabase.typed.database else { return }
        let students: [TypedStudent] = try await database.read()
        blackHole(students)
    }

    Benchmark("LocalLMDB.batchWrite1000Typed", configuration: .init(maxIterations: 50)) { benchmark in
        let directory = try Fixture.temporaryDirectory("batch-typed")
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try LocalDatabase(directory: directory)
        let records = (0..<1000).map { Record(id: UUID().uuidString, data: TypedStudent(index: $0)) }
        benchmark.startMeasurement()
        try await database.write(contentsOf: records)
        benchmark.stopMeasurement()
    }
}

import Foundation
import LocalLMDB

// A short tour of LocalLMDB: writes, reads, counts and a rolled-back transaction.

final class Person: Storable {
    private(set) var name: String
    private(set) var height: Double

    init(name: String, height: Double) {
        self.name = name
        self.height = height
    }

    required init(dataObject: DataObject) {
        name = dataObject.get("name")
        height = dataObject.get("height")
    }

    func toDataObject() -> DataObject {
        DataObject(self).add(key: "name", value: name).add(key: "height", value: height)
    }
}

let directory = FileManager.default.temporaryDirectory.appendingPathComponent("locallmdb-demo-\(UUID().uuidString)")
defer { try? FileManager.default.removeItem(at: directory) }

let database = try LocalDatabase(directory: directory)
try await database.write(Record(id: "andre", data: Person(name: "Andre", height: 188.0)))
for index in 0..<1000 {
    try await database.write(Record(data: Person(name: "Person \(index)", height: 150 + Double(index % 50))))
}
let andre: Person? = try await database.read(id: "andre")
print("read by id:", andre?.name ?? "missing", andre?.height ?? 0)
print("people stored:", try await database.count(Person.self))

try await database.startTransaction()
try await database.clearDatabase()
print("inside a transaction, after clearDatabase:", try await database.count())
try await database.rollbackTransaction()
print("after rollback:", try await database.count())

let start = Date()
let people: [Person] = try await database.read()
print("read all \(people.count) people in \(Int(Date().timeIntervalSince(start) * 1_000_000)) µs")

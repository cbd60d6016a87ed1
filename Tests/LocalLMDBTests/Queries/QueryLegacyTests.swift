import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import LocalLMDBTestSupport
import Testing

/// A model before and after a rename, for queries that follow `Legacy`.
final class RenamedBefore: Storable {
    let name: String
    init(name: String) { self.name = name }
    required init(dataObject: DataObject) { name = dataObject.get("name") }
    func toDataObject() -> DataObject { DataObject(self).add(key: "name", value: name) }
}

final class RenamedAfter: Storable {
    static let indexes: [Index] = [.on("name")]
    let name: String
    init(name: String) { self.name = name }
    required init(dataObject: DataObject) { name = dataObject.get("name") }
    func toDataObject() -> DataObject { DataObject(self).add(key: "name", value: name) }
}

@Suite("Queries and legacy class names")
struct QueryLegacyTests {
    @Test func aQueryFindsRecordsStillStoredUnderALegacyName() async throws {
        try await withDatabase { database, _ in
            _ = try await database.write(contentsOf: ["b", "d"].map { Record(id: "old-\($0)", data: RenamedBefore(name: $0)) })
            Legacy.addClassRefactor(old: "RenamedBefore", new: "RenamedAfter")
            defer { Legacy.removeClassRefactor(old: "RenamedBefore") }
            _ = try await database.write(contentsOf: ["a", "c"].map { Record(id: "new-\($0)", data: RenamedAfter(name: $0)) })
            let names = try await database.read(Query(RenamedAfter.self).filter("name", .atLeast("b")).sorted(by: "name")).map(\.name)
            #expect(names == ["b", "c", "d"])
            #expect(try await database.readIDs(Query(RenamedAfter.self).filter("name", .equals("d"))) == ["old-d"])
            #expect(try await database.count(Query(RenamedAfter.self).sorted(by: "name")) == 4)
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }
}

@Suite("Index builds")
struct IndexBuildTests {
    @Test func buildingAnIndexReportsItsProgress() async throws {
        try await withDatabase { database, _ in
            _ = try await database.write(contentsOf: (0..<5_000).map { Record(id: "t\($0)", data: Ticket(queue: "q\($0 % 10)", priority: $0, title: "")) })
            #expect(try await database.dropIndex(.on("queue", "priority", counted: true), of: Ticket.self))
            let reports = Locked<[IndexBuildProgress]>([])
            try await database.prepareIndexes(of: Ticket.self) { progress in reports.withLock { $0.append(progress) } }
            let seen = reports.withLock { $0 }
            #expect(seen.map(\.recordsIndexed) == [0, 4096, 5_000])
            #expect(seen.allSatisfy { $0.recordCount == 5_000 && $0.className == "Ticket" && $0.index == "queue, priority counted" })
            #expect(seen.last?.fractionCompleted == 1)
            #expect(try await database.count(Query(Ticket.self).filter("queue", .equals("q3"))) == 500)
            // Prepared again, an index already stored is left as it is.
            reports.withLock { $0 = [] }
            try await database.prepareIndexes(of: Ticket.self) { progress in reports.withLock { $0.append(progress) } }
            #expect(reports.withLock { $0 }.isEmpty)
        }
    }
}

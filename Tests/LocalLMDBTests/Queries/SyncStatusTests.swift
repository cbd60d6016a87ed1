import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import LocalLMDBTestSupport
import Testing

/// A hand-written syncable model that also writes a field its reader ignores.
final class Visit: Storable, Syncable, Identifiable {
    let id: String
    let place: String
    var syncStatus: SyncStatus = .undetermined

    init(id: String, place: String, syncStatus: SyncStatus = .undetermined) {
        (self.id, self.place, self.syncStatus) = (id, place, syncStatus)
    }

    required init(dataObject: DataObject) {
        id = dataObject.get("id")
        place = dataObject.get("place")
    }

    func toDataObject() -> DataObject {
        DataObject(self).add(key: "id", value: id).add(key: "place", value: place).add(key: "unknownToReaders", value: "kept")
    }
}

/// A `Codable` syncable model.
struct Reading: Codable, Syncable, Identifiable, Equatable {
    var id: String
    var value: Double
    var syncStatus: SyncStatus = .notSynced
}

@Suite("Sync status")
struct SyncStatusTests {
    @Test func aWriteStoresTheModelsStatusAndReadsGiveItBack() async throws {
        try await withDatabase { database, _ in
            try await database.write(Visit(id: "v1", place: "Oslo"))
            try await database.write(Visit(id: "v2", place: "Rome", syncStatus: .synced))
            try await database.write(contentsOf: [Reading(id: "r1", value: 1), Reading(id: "r2", value: 2, syncStatus: .syncing)])
            let v2 = try await database.read(Visit.self, id: "v2")
            #expect(v2?.syncStatus == .synced)
            #expect(try await database.syncStatus(of: Visit.self, id: "v1") == .undetermined)
            #expect(try await database.syncStatus(for: Reading(id: "r2", value: 0)) == .syncing)
            #expect(try await database.syncStatus(of: Reading.self, id: "nobody") == nil)
            #expect(try await database.syncStatus(of: Reading.self, id: "v1") == nil)  // another type's record
            let notSynced: [Reading] = try await database.read(withStatus: .notSynced)
            #expect(notSynced.map(\.id) == ["r1"])
            // Every type at once, by class name.
            #expect(try await database.readIDs(withStatus: .undetermined) == ["Visit": ["v1"]])
            #expect(try await database.readIDs(withStatus: .syncing) == ["Reading": ["r2"]])
            _ = try await database.setSyncStatus(.syncing, forIDs: ["v1"], of: Visit.self)
            #expect(try await database.readIDs(withStatus: .syncing) == ["Reading": ["r2"], "Visit": ["v1"]])
            #expect(try await database.readIDs(withStatus: .synced) == ["Visit": ["v2"]])
        }
    }

    @Test func settingTheStatusChangesOnlyTheStoredStatus() async throws {
        try await withDatabase { database, directory in
            try await database.write(contentsOf: (1...5).map { Visit(id: "v\($0)", place: "p\($0)") })
            #expect(try await database.setSyncStatus(.syncing, for: [Visit(id: "v1", place: ""), Visit(id: "v3", place: "")]) == 2)
            #expect(try await database.setSyncStatus(.synced, forIDs: ["v4", "missing"], of: Visit.self) == 1)
            let syncing: [Visit] = try await database.read(withStatus: .syncing)
            #expect(syncing.map(\.id) == ["v1", "v3"])
            #expect(syncing.map(\.place) == ["p1", "p3"])
            #expect(try await database.count(Query(Visit.self).filter("syncStatus", .equals(SyncStatus.undetermined.rawValue))) == 2)
            // The field the model does not read is still there: the bytes were patched, not re-encoded.
            await database.close()
            let reopened = try LocalDatabase(directory: directory)
            let raw = try await reopened.engine.read(ReadRawDocument(key: StorageKey("v1", maxKeySize: 511)))
            #expect(raw?.contains("\"unknownToReaders\":\"kept\"") == true)
            #expect(raw?.contains("\"syncStatus\":2") == true)
            #expect(try await reopened.verifyIntegrity().isConsistent)
        }
    }

    @Test func settingTheStatusInATransactionIsUndoneByItsRollback() async throws {
        try await withDatabase { database, _ in
            try await database.write(Reading(id: "r", value: 1))
            var changes = database.changes().makeAsyncIterator()
            try await database.startTransaction()
            #expect(try await database.setSyncStatus(.synced, for: Reading(id: "r", value: 1)))
            #expect(try await database.syncStatus(of: Reading.self, id: "r") == .synced)
            try await database.rollbackTransaction()
            #expect(try await database.syncStatus(of: Reading.self, id: "r") == .notSynced)
            #expect(try await database.setSyncStatus(.synced, for: Reading(id: "r", value: 1)))
            let commit = try await changes.next()
            #expect(commit?.changes == [.written(id: "r", className: "Reading")])
            let synced: [Reading] = try await database.read(withStatus: .synced)
            #expect(synced == [Reading(id: "r", value: 1, syncStatus: .synced)])
        }
    }

    @Test func theSynchronousFaceHasThemToo() async throws {
        try await withTemporaryDirectory { directory in
            let database = try SerializationDatabase(directory: directory.appendingPathComponent("db"))
            #expect(database.write(contentsOf: [Reading(id: "a", value: 1), Reading(id: "b", value: 2)]) == 2)
            #expect(database.setSyncStatus(.synced, forIDs: ["b"], of: Reading.self) == 1)
            #expect(database.syncStatus(of: Reading.self, id: "b") == .synced)
            let notSynced: [Reading] = database.read(withStatus: .notSynced)
            #expect(notSynced.map(\.id) == ["a"])
        }
    }
}

/// A record's stored JSON, as text.
struct ReadRawDocument: PlainRead {
    let key: StorageKey
    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> String? {
        try snapshot.record(key, id: "").map { String(decoding: $0.object.extent, as: UTF8.self) }
    }
}

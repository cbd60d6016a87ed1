import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import Testing

// Classes named for these tests alone: Legacy's registry is process-wide.
final class GadgetV1: Storable {
    let label: String
    init(label: String) { self.label = label }
    required init(dataObject: DataObject) { label = dataObject.get("label") }
    func toDataObject() -> DataObject { DataObject(self).add(key: "label", value: label) }
}

final class GadgetV2: Storable {
    let title: String
    init(title: String) { self.title = title }
    required init(dataObject: DataObject) { title = dataObject.get("title", legacyKeys: ["label"]) }
    func toDataObject() -> DataObject { DataObject(self).add(key: "title", value: title) }
}

final class GadgetV3: Storable {
    let name: String
    init(name: String) { self.name = name }
    required init(dataObject: DataObject) { name = dataObject.get("name", legacyKeys: ["title", "label"]) }
    func toDataObject() -> DataObject { DataObject(self).add(key: "name", value: name) }
}

final class Holder: Storable {
    let gadget: GadgetV3?
    init(gadget: GadgetV3?) { self.gadget = gadget }
    required init(dataObject: DataObject) { gadget = dataObject.getObjectOptional("gadget", type: GadgetV3.self) }
    func toDataObject() -> DataObject { DataObject(self).add(key: "gadget", value: gadget) }
}

@Suite("Legacy class refactors")
struct LegacyTests {
    @Test func chainsOfRenamesAreFollowedByEveryOperation() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "one", data: GadgetV1(label: "first")))
            try await database.write(Record(id: "two", data: GadgetV2(title: "second")))
            try await database.write(Record(id: "three", data: GadgetV3(name: "third")))
            Legacy.addClassRefactor(old: "GadgetV1", new: "GadgetV2")
            defer { Legacy.removeClassRefactor(old: "GadgetV1") }
            Legacy.addClassRefactor(old: "GadgetV2", new: "GadgetV3")
            defer { Legacy.removeClassRefactor(old: "GadgetV2") }

            let one: GadgetV3? = try await database.read(id: "one")
            #expect(one?.name == "first")
            let all: [GadgetV3] = try await database.read()
            #expect(Set(all.map(\.name)) == ["first", "second", "third"])
            #expect(Set(try await database.readIDs(GadgetV3.self)) == ["one", "two", "three"])
            #expect(try await database.count(GadgetV3.self) == 3)
            #expect(try await database.delete(GadgetV3.self) == 3)
            #expect(try await database.count() == 0)
        }
    }

    @Test func nestedObjectsFollowRenames() async throws {
        let legacyJSON = #"{"object":"Holder","gadget":{"object":"GadgetLegacyName","title":"nested"}}"#
        Legacy.addClassRefactor(old: "GadgetLegacyName", new: "GadgetV3")
        defer { Legacy.removeClassRefactor(old: "GadgetLegacyName") }
        let holder = Holder(dataObject: DataObject(rawString: legacyJSON))
        #expect(holder.gadget?.name == "nested")
    }

    @Test func cyclesDoNotHang() {
        Legacy.addClassRefactor(old: "CycleA", new: "CycleB")
        defer { Legacy.removeClassRefactor(old: "CycleA") }
        Legacy.addClassRefactor(old: "CycleB", new: "CycleA")
        defer { Legacy.removeClassRefactor(old: "CycleB") }
        let object = DataObject(rawString: #"{"object":"Holder","gadget":{"object":"CycleA","name":"x"}}"#)
        #expect(Holder(dataObject: object).gadget?.name == "x")
    }

    @Test func legacyIsSafeFromManyThreads() async {
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<8 {
                group.addTask {
                    for step in 0..<200 {
                        Legacy.addClassRefactor(old: "Thread\(index)Old\(step)", new: "Thread\(index)New")
                        defer { Legacy.removeClassRefactor(old: "Thread\(index)Old\(step)") }
                        _ = Holder(dataObject: DataObject(rawString: #"{"object":"Holder","gadget":{"object":"Thread\#(index)Old\#(step)","name":"n"}}"#))
                        // The rename is seen at once, by this thread and through a nested object's class.
                        #expect(Legacy.currentName(of: "Thread\(index)Old\(step)") == "Thread\(index)New")
                    }
                }
            }
        }
    }
}

final class GizmoOld: Storable {
    let label: String
    init(label: String) { self.label = label }
    required init(dataObject: DataObject) { label = dataObject.get("label") }
    func toDataObject() -> DataObject { DataObject(self).add(key: "label", value: label) }
}

final class GizmoNew: Storable {
    let label: String
    init(label: String) { self.label = label }
    required init(dataObject: DataObject) { label = dataObject.get("label") }
    func toDataObject() -> DataObject { DataObject(self).add(key: "label", value: label) }
}

@Suite("Legacy names cached per thread")
struct LegacyCacheTests {
    /// Each thread caches Legacy's answers so that reads take no lock; a refactor added later
    /// must still be seen by a thread that cached the answer before it.
    @Test func aRefactorAddedAfterAThreadCachedTheNamesIsSeenByThatThread() async throws {
        try await withTemporaryDirectory { directory in
            // The synchronous face keeps every call on this one thread.
            let database = try SerializationDatabase(directory: directory, configuration: DatabaseConfiguration())
            #expect(database.write(Record(id: "old", data: GizmoOld(label: "before the rename"))))
            #expect(database.write(Record(id: "new", data: GizmoNew(label: "after"))))
            #expect(database.count(GizmoNew.self) == 1)
            let before: [GizmoNew] = database.read()
            #expect(before.map(\.label) == ["after"])
            Legacy.addClassRefactor(old: "GizmoOld", new: "GizmoNew")
            defer { Legacy.removeClassRefactor(old: "GizmoOld") }
            #expect(database.count(GizmoNew.self) == 2)
            let after: [GizmoNew] = database.read()
            #expect(Set(after.map(\.label)) == ["before the rename", "after"])
            let renamed: GizmoNew? = database.read(id: "old")
            #expect(renamed?.label == "before the rename")
        }
    }
}

import Foundation
import LocalLMDB
import LocalLMDBTestSupport
import Testing

// Two types whose short names are the same ("Widget", "Gadget"), as with types of one name in two
// modules. Each pair is used by one test only: registration depends on what a process used before.

enum ConflictA {
    final class Widget: Storable {
        let size: Int
        init(size: Int) { self.size = size }
        required init(dataObject: DataObject) { size = dataObject.get("size") }
        func toDataObject() -> DataObject { DataObject(self).add(key: "size", value: size) }
    }
}

enum ConflictB {
    final class Widget: Storable {
        let color: String
        init(color: String) { self.color = color }
        required init(dataObject: DataObject) { color = dataObject.get("color") }
        func toDataObject() -> DataObject { DataObject(self).add(key: "color", value: color) }
    }

    /// Holds a `ConflictB.Widget` as a nested object.
    final class Holder: Storable {
        let widget: Widget
        init(widget: Widget) { self.widget = widget }
        required init(dataObject: DataObject) { widget = dataObject.getObject("widget", type: Widget.self) }
        func toDataObject() -> DataObject { DataObject(self).add(key: "widget", value: widget) }
    }
}

enum RenameA {
    final class Gadget: Storable {
        let size: Int
        init(size: Int) { self.size = size }
        required init(dataObject: DataObject) { size = dataObject.get("size") }
        func toDataObject() -> DataObject { DataObject(self).add(key: "size", value: size) }
    }
}

enum RenameB {
    final class Gadget: Storable {
        let color: String
        init(color: String) { self.color = color }
        required init(dataObject: DataObject) { color = dataObject.get("color") }
        func toDataObject() -> DataObject { DataObject(self).add(key: "color", value: color) }
    }
}

/// Used before it is registered.
final class LateRegistered: Storable {
    init() {}
    required init(dataObject: DataObject) {}
    func toDataObject() -> DataObject { DataObject(self) }
}

@Suite("Class identity")
struct ClassIdentityTests {
    @Test func twoTypesWithOneShortNameAreNeverMerged() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "a", data: ConflictA.Widget(size: 3)))
            // The second type cannot write under the name, alone or nested, and nothing is stored.
            await expectError(\.isClassNameConflict) { try await database.write(Record(id: "b", data: ConflictB.Widget(color: "red"))) }
            await expectError(\.isClassNameConflict) {
                try await database.write(Record(id: "h", data: ConflictB.Holder(widget: ConflictB.Widget(color: "blue"))))
            }
            #expect(try await database.count() == 1)
            #expect(try await database.count(ConflictA.Widget.self) == 1)
            // Nor read, count, list or delete the other type's records as its own.
            await expectError(\.isClassNameConflict) { _ = try await database.count(ConflictB.Widget.self) }
            await expectError(\.isClassNameConflict) { _ = try await database.readIDs(ConflictB.Widget.self) }
            await expectError(\.isClassNameConflict) { let _: [ConflictB.Widget] = try await database.read() }
            await expectError(\.isClassNameConflict) { let _: ConflictB.Widget? = try await database.read(id: "a") }
            await expectError(\.isClassNameConflict) { try await database.delete(ConflictB.Widget.self) }
            let kept: ConflictA.Widget? = try await database.read(id: "a")
            #expect(kept?.size == 3)
            #expect(try await database.count(ConflictA.Widget.self) == 1)
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }

    @Test func theConflictIsDetectedInsideOneTransactionToo() async throws {
        try await withDatabase { database, _ in
            try await database.startTransaction()
            try await database.write(Record(id: "a", data: ConflictA.Widget(size: 1)))
            await expectError(\.isClassNameConflict) { try await database.write(Record(id: "b", data: ConflictB.Widget(color: "red"))) }
            try await database.commitTransaction()
            #expect(try await database.readIDs(ConflictA.Widget.self) == ["a"])
        }
    }

    @Test func aRegisteredNameLetsBothTypesLiveSideBySide() async throws {
        try StoredClasses.register(RenameB.Gadget.self, as: "RenameB.Gadget")
        try StoredClasses.register(RenameB.Gadget.self, as: "RenameB.Gadget")  // the same again: nothing happens
        #expect(throws: LocalDatabaseError.self) { try StoredClasses.register(RenameB.Gadget.self, as: "Other") }
        #expect(throws: LocalDatabaseError.self) { try StoredClasses.register(RenameA.Gadget.self, as: "RenameB.Gadget") }
        try await withDatabase { database, _ in
            try await database.write(Record(id: "a", data: RenameA.Gadget(size: 5)))
            try await database.write(Record(id: "b", data: RenameB.Gadget(color: "green")))
            #expect(try await database.count(RenameA.Gadget.self) == 1)
            #expect(try await database.count(RenameB.Gadget.self) == 1)
            let green: RenameB.Gadget? = try await database.read(id: "b")
            #expect(green?.color == "green")
            await expectError({ if case .typeMismatch = $0 { true } else { false } }) {
                let _: RenameA.Gadget? = try await database.read(id: "b")
            }
            #expect(try await database.delete(RenameB.Gadget.self) == 1)
            #expect(try await database.readIDs(RenameA.Gadget.self) == ["a"])
        }
    }

    @Test func registeringAClassAfterItsFirstUseIsRefused() throws {
        _ = LateRegistered().toDataObject()
        #expect(throws: LocalDatabaseError.self) { try StoredClasses.register(LateRegistered.self, as: "Late") }
    }

    @Test func subclassesWrittenByAnotherProcessWhileOpenAreRestoredWhole() async throws {
        try await withDatabase { database, directory in
            #expect(try await database.count() == 0)  // open before the other process writes
            #expect(try runHelper(["write-drawing", directory.path]).lines == ["done"])
            let circle: Shape? = try await database.read(id: "c")
            #expect((circle as? Circle)?.radius == 2.5)
            let drawing: Drawing? = try await database.read(id: "d")
            let inner = try #require(drawing?.shape as? Circle)
            #expect(inner.radius == 7 && inner.name == "inner")
            // Written back, the nested subclass keeps its fields.
            try await database.write(Record(id: "d", data: try #require(drawing)))
            let again: Drawing? = try await database.read(id: "d")
            #expect((again?.shape as? Circle)?.radius == 7)
        }
    }

    @Test func aClassThisProcessCannotFindIsAnErrorUntilRegistered() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("db")
            #expect(try runHelper(["write-toolbox", path.path]).lines == ["done"])
            // As if Hammer had moved to another module: its recorded owner no longer exists.
            #expect(try runHelper(["set-owner", path.path, "Hammer", "5Moved6HammerC"]).lines == ["done"])
            let database = try LocalDatabase(directory: path)
            await expectError({ $0 == .unresolvableClass(id: "t", className: "Hammer") }) {
                let _: Toolbox? = try await database.read(id: "t")
            }
            await expectError({ $0 == .unresolvableClass(id: "t", className: "Hammer") }) {
                let _: [Toolbox] = try await database.read()
            }
            await expectError({ $0 == .unresolvableClass(id: "h", className: "Hammer") }) {
                let _: Tool? = try await database.read(id: "h")
            }
            // Registered, the moved class adopts its records: read whole, and written back whole.
            try StoredClasses.register(Hammer.self)
            let toolbox = try #require(try await database.read(id: "t") as Toolbox?)
            #expect((toolbox.tool as? Hammer)?.weight == 9)
            try await database.write(Record(id: "t", data: toolbox))
            let hammer: Tool? = try await database.read(id: "h")
            #expect((hammer as? Hammer)?.weight == 3)
            let again: Toolbox? = try await database.read(id: "t")
            #expect((again?.tool as? Hammer)?.weight == 9)
        }
    }
}

/// Stores either a `Shape` or, wrongly, a `Note` under "shape"; reads a `Shape` back.
final class Sketch: Storable {
    let shape: Shape
    let storesNote: Bool
    init(storesNote: Bool) {
        shape = Shape(name: "square")
        self.storesNote = storesNote
    }
    required init(dataObject: DataObject) {
        shape = dataObject.getObject("shape", type: Shape.self)
        storesNote = false
    }
    func toDataObject() -> DataObject {
        storesNote ? DataObject(self).add(key: "shape", value: Note(text: "not a shape")) : DataObject(self).add(key: "shape", value: shape)
    }
}

extension ClassIdentityTests {
    @Test func aNestedObjectOfAnUnrelatedClassIsAnErrorNotACast() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "good", data: Sketch(storesNote: false)))
            try await database.write(Record(id: "odd", data: Sketch(storesNote: true)))
            let good: Sketch? = try await database.read(id: "good")
            #expect(good?.shape.name == "square")
            await expectError({ $0 == .typeMismatch(id: "odd", requested: "Shape", stored: "Note") }) {
                let _: Sketch? = try await database.read(id: "odd")
            }
            await expectError({ $0 == .typeMismatch(id: "odd", requested: "Shape", stored: "Note") }) {
                let _: [Sketch] = try await database.read()
            }
        }
    }
}

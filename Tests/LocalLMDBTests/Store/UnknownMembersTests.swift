import Foundation
@testable import LocalLMDB
import LocalLMDBTestSupport
import Synchronization
import Testing

/// An older version of a card: it knows the title and an optional note, not the fields a newer
/// version of the app added (`color`, `tags`, `archived`).
private struct Card: Codable, Persistable {
    var title: String
    var note: String?
}

/// The same, written by hand: the note is added only when there is one, and read back.
private final class HandCard: Storable {
    var title: String
    var note: String?

    init(title: String, note: String?) {
        self.title = title
        self.note = note
    }

    init(dataObject: DataObject) {
        title = dataObject.get("title")
        note = dataObject.get("note")
    }

    func toDataObject() -> DataObject {
        let object = DataObject(self).add(key: "title", value: title)
        if let note { object.add(key: "note", value: note) }
        return object
    }
}

/// A model that reads every member (`allKeys`): it knows them all, and writes whole documents.
private struct Bag: Codable, Persistable {
    var values: [String: String]

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(values: [String: String]) { self.values = values }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        values = [:]
        for key in container.allKeys { values[key.stringValue] = try? container.decode(String.self, forKey: key) }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        for (key, value) in values.sorted(by: { $0.key < $1.key }) { try container.encode(value, forKey: Key(stringValue: key)) }
    }
}

/// A base class and a subclass with a member of its own, coded flat.
private class KeptAnimal: Codable, Persistable {
    var name: String
    init(name: String) { self.name = name }
    private enum Keys: String, CodingKey { case name }
    required init(from decoder: any Decoder) throws { name = try decoder.container(keyedBy: Keys.self).decode(String.self, forKey: .name) }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(name, forKey: .name)
    }
}

private final class KeptDog: KeptAnimal {
    var chip: String?
    init(name: String, chip: String?) {
        self.chip = chip
        super.init(name: name)
    }
    private enum Keys: String, CodingKey { case chip }
    required init(from decoder: any Decoder) throws {
        chip = try decoder.container(keyedBy: Keys.self).decodeIfPresent(String.self, forKey: .chip)
        try super.init(from: decoder)
    }
    override func encode(to encoder: any Encoder) throws {
        try super.encode(to: encoder)
        var container = encoder.container(keyedBy: Keys.self)
        try container.encodeIfPresent(chip, forKey: .chip)
    }
}

/// A model whose data object is an empty object, that reads `x`.
private final class KeptBare: Storable {
    var x: Int?
    init() {}
    init(dataObject: DataObject) { x = dataObject.get("x") }
    func toDataObject() -> DataObject { DataObject(rawString: "{}") }
}

/// A model that stores a flag by the presence of a member, read with `hasField`.
private final class KeptFlag: Storable {
    var title: String
    var archived: Bool
    init(title: String, archived: Bool) { (self.title, self.archived) = (title, archived) }
    init(dataObject: DataObject) {
        title = dataObject.get("title")
        archived = dataObject.hasField("archived")
    }
    func toDataObject() -> DataObject {
        let object = DataObject(self).add(key: "title", value: title)
        if archived { object.add(key: "archived", value: true) }
        return object
    }
}

/// Counts its restores: a database that does not synchronize runs none to learn its members.
private final class KeptCounted: Storable {
    static let restores = Mutex(0)
    var title: String
    init(title: String) { self.title = title }
    init(dataObject: DataObject) {
        Self.restores.withLock { $0 += 1 }
        title = dataObject.get("title")
    }
    func toDataObject() -> DataObject { DataObject(self).add(key: "title", value: title) }
}

/// Fields of newer app versions kept on write: a model replacing a stored document keeps the
/// members it does not read, on a synchronized database.
@Suite struct UnknownMembersTests {
    /// Stores `documents` (id → document) as they are, by an import: the app's newer version.
    private func plant(_ documents: [(id: String, className: String, json: String)], in database: LocalDatabase, directory: URL) async throws {
        let file = directory.deletingLastPathComponent().appendingPathComponent("newer-\(UUID().uuidString).jsonl")
        let lines = documents.map { #"{"id":"\#($0.id)","class":"\#($0.className)","value":\#($0.json)}"# }
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: file)
        #expect(try await database.importLines(from: file) == documents.count)
    }

    /// The stored document of `id`, as an object.
    private func document(_ database: LocalDatabase, _ id: String) async throws -> [String: Any] {
        let stored = try #require(try await database.storedDocument(id: id))
        return try #require(try JSONSerialization.jsonObject(with: Data(stored.json.utf8), options: [.fragmentsAllowed]) as? [String: Any])
    }

    private static let newer = #"{"object":"Card","title":"first","note":"a note","color":"red","tags":[1,2],"archived":null}"#

    @Test("A model's write keeps the members it does not read, and removes the nil optional it does read")
    func codableModelKeepsUnknownMembers() async throws {
        try await withDatabase { database, directory in
            _ = try await database.enableSync(device: "d")
            try await plant([("c", "Card", Self.newer)], in: database, directory: directory)

            try await database.write(Record(id: "c", data: Card(title: "second", note: nil)))
            var stored = try await document(database, "c")
            #expect(stored["title"] as? String == "second")
            #expect(stored["note"] == nil)
            #expect(stored["color"] as? String == "red")
            #expect(stored["tags"] as? [Int] == [1, 2])
            #expect(stored.keys.contains("archived") && stored["archived"] is NSNull)
            let card: Card? = try await database.read(id: "c")
            #expect(card?.title == "second" && card?.note == nil)

            // Written again, the kept members stay kept, once each.
            try await database.write(Record(id: "c", data: Card(title: "third", note: "back")))
            stored = try await document(database, "c")
            #expect(stored["note"] as? String == "back")
            #expect(stored["color"] as? String == "red")
            let json = try #require(try await database.storedDocument(id: "c")).json
            #expect(json.components(separatedBy: "\"color\"").count == 2)
        }
    }

    @Test("A hand-written model that leaves a nil field out still removes it, since it reads it")
    func storableModelRemovesWhatItReads() async throws {
        try await withDatabase { database, directory in
            _ = try await database.enableSync(device: "d")
            try await plant([("h", "HandCard", #"{"object":"HandCard","title":"t","note":"n","color":"blue"}"#)], in: database, directory: directory)
            try await database.write(Record(id: "h", data: HandCard(title: "u", note: nil)))
            let stored = try await document(database, "h")
            #expect(stored["title"] as? String == "u")
            #expect(stored["note"] == nil)
            #expect(stored["color"] as? String == "blue")
        }
    }

    @Test("A batch that writes one id twice keeps the members of the document each write replaces")
    func batchWritingAnIDTwice() async throws {
        try await withDatabase { database, directory in
            _ = try await database.enableSync(device: "d")
            try await plant([("c", "Card", Self.newer)], in: database, directory: directory)
            try await database.write(contentsOf: [
                Record(id: "c", data: Card(title: "one", note: "kept?")),
                Record(id: "x", data: Card(title: "other", note: nil)),
                Record(id: "c", data: Card(title: "two", note: nil)),
            ])
            let stored = try await document(database, "c")
            #expect(stored["title"] as? String == "two")
            #expect(stored["note"] == nil)
            #expect(stored["color"] as? String == "red")
        }
    }

    @Test("Inside a transaction, and for the records a write buffers, the members are kept too")
    func insideATransaction() async throws {
        try await withDatabase { database, directory in
            _ = try await database.enableSync(device: "d")
            try await plant([("c", "Card", Self.newer)], in: database, directory: directory)
            try await database.startTransaction()
            try await database.write(Record(id: "c", data: Card(title: "in a transaction", note: nil)))
            try await database.commitTransaction()
            let stored = try await document(database, "c")
            #expect(stored["title"] as? String == "in a transaction")
            #expect(stored["color"] as? String == "red")
        }
    }

    @Test("Whole documents replace what is stored: a model reading every member, another class, an import, a database that does not synchronize")
    func wholeDocumentsReplace() async throws {
        try await withDatabase { database, directory in
            _ = try await database.enableSync(device: "d")
            try await plant([
                ("b", "Bag", #"{"object":"Bag","kept":"no","other":"no"}"#),
                ("c", "Card", Self.newer),
                ("i", "Card", Self.newer),
            ], in: database, directory: directory)
            try await database.write(Record(id: "b", data: Bag(values: ["kept": "yes"])))
            #expect(try await document(database, "b").keys.sorted() == ["kept", "object"])
            // A record of another class under the id.
            try await database.write(Record(id: "c", data: HandCard(title: "hand", note: nil)))
            #expect(try await document(database, "c").keys.sorted() == ["object", "title"])
            // An import is a whole document.
            try await plant([("i", "Card", #"{"object":"Card","title":"imported"}"#)], in: database, directory: directory)
            #expect(try await document(database, "i").keys.sorted() == ["object", "title"])
        }
        try await withDatabase { database, directory in
            try await plant([("c", "Card", Self.newer)], in: database, directory: directory)
            try await database.write(Record(id: "c", data: Card(title: "second", note: nil)))
            #expect(try await document(database, "c").keys.sorted() == ["object", "title"])
        }
    }

    @Test("A subclass written through its base type is learned as itself: its own nil optional is removed")
    func subclassThroughItsBaseType() async throws {
        try await withDatabase { database, _ in
            _ = try await database.enableSync(device: "d")
            try await database.write(Record<KeptAnimal>(id: "a", data: KeptDog(name: "Rex", chip: nil)))
            try await database.write(Record<KeptAnimal>(id: "a", data: KeptDog(name: "Rex", chip: "X")))
            try await database.write(Record<KeptAnimal>(id: "a", data: KeptDog(name: "Rex", chip: nil)))
            let stored = try await document(database, "a")
            #expect(stored["chip"] == nil)
            #expect(stored["name"] as? String == "Rex")
        }
    }

    @Test("A new document with no member keeps what it does not know and stays valid JSON")
    func emptyNewDocument() async throws {
        try await withDatabase { database, directory in
            _ = try await database.enableSync(device: "d")
            try await plant([("b", "KeptBare", #"{"object":"KeptBare","x":1,"y":[2]}"#)], in: database, directory: directory)
            try await database.write(Record(id: "b", data: KeptBare()))
            let json = try #require(try await database.storedDocument(id: "b")).json
            #expect(json == #"{"y":[2]}"#)
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }

    @Test("A member read with hasField is known: a flag stored by presence is cleared")
    func presenceFlag() async throws {
        try await withDatabase { database, _ in
            _ = try await database.enableSync(device: "d")
            try await database.write(Record(id: "f", data: KeptFlag(title: "t", archived: false)))
            try await database.write(Record(id: "f", data: KeptFlag(title: "t", archived: true)))
            try await database.write(Record(id: "f", data: KeptFlag(title: "t", archived: false)))
            let flagged: KeptFlag? = try await database.read(id: "f")
            #expect(flagged?.archived == false)
        }
    }

    @Test("A database that does not synchronize runs no model code to learn what it reads")
    func noLearningWithoutSync() async throws {
        try await withDatabase { database, _ in
            let before = KeptCounted.restores.withLock { $0 }
            try await database.write(Record(id: "c", data: KeptCounted(title: "t")))
            try await database.write(contentsOf: [Record(id: "d", data: KeptCounted(title: "u"))])
            #expect(KeptCounted.restores.withLock { $0 } == before)
        }
    }
}

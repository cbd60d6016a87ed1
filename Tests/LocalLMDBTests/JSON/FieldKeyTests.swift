import Foundation
import LocalLMDB
import LocalLMDBTestSupport
import Testing

/// Reads and writes fields under keys given at run time.
final class KeysModel: Storable {
    nonisolated(unsafe) static var keys: [String] = []
    var values: [String: String]
    init(_ values: [String: String]) { self.values = values }
    required init(dataObject: DataObject) {
        values = [:]
        for key in KeysModel.keys { values[key] = dataObject.get(key, legacyKeys: []) as String? }
    }
    func toDataObject() -> DataObject {
        let object = DataObject(self)
        for (key, value) in values.sorted(by: { $0.key < $1.key }) { object.add(key: key, value: value) }
        return object
    }
}

@Suite("Field keys", .serialized)
struct FieldKeyTests {
    let nfc = "caf\u{E9}"
    let nfd = "cafe\u{301}"

    @Test func canonicallyEquivalentKeysAreOneKeyEverywhere() async throws {
        #expect(nfc == nfd)  // Swift's rule, which field keys follow
        for (first, second) in [(nfc, nfd), (nfd, nfc), ("K", "\u{212A}"), ("\u{212A}", "K")] {
            // add, then add again with the other spelling: one member, the last value.
            let object = DataObject(rawString: "{}").add(key: first, value: "one").add(key: second, value: "two")
            #expect(object.get(first) == "two" && object.get(second) == "two")
            let text = try #require(object.toRawString())
            #expect(text.components(separatedBy: "two").count == 2 && !text.contains("one"))
            // Read back in place, through either spelling.
            let parsed = DataObject(rawString: text)
            #expect(parsed.get(first) == "two" && parsed.get(second) == "two")
            // From outside JSON: both spellings in one object are one key, the last wins.
            let outside = try DataObject(validating: "{\"\(first)\":\"a\",\"\(second)\":\"b\"}")
            #expect(outside.get(first) == "b" && outside.get(second) == "b")
        }
        // Escaped spellings too.
        let escaped = try DataObject(validating: #"{"caf\u00e9":"x"}"#)
        #expect(escaped.get(nfd) == "x")
    }

    @Test func keysReadFromADatabaseMatchEitherSpelling() async throws {
        KeysModel.keys = [nfd, "\u{212A}", "plain"]
        try await withDatabase { database, _ in
            try await database.write(Record(id: "k", data: KeysModel([nfc: "accent", "K": "kelvin", "plain": "p"])))
            let read = try #require(try await database.read(id: "k") as KeysModel?)
            #expect(read.values[nfd] == "accent" && read.values["\u{212A}"] == "kelvin" && read.values["plain"] == "p")
        }
    }

    @Test func idsAreComparedByTheirBytes() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: nfc, data: Note(text: "precomposed")))
            try await database.write(Record(id: nfd, data: Note(text: "decomposed")))
            #expect(try await database.count(Note.self) == 2)
            let first: Note? = try await database.read(id: nfc)
            let second: Note? = try await database.read(id: nfd)
            #expect(first?.text == "precomposed" && second?.text == "decomposed")
        }
    }
}

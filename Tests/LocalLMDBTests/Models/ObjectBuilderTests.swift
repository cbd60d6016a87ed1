import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import LocalLMDBTestSupport
import Testing

/// A model whose data object is whatever `build` adds to it.
final class Built: Storable {
    let build: (DataObject) -> DataObject
    init(_ build: @escaping (DataObject) -> DataObject) { self.build = build }
    required init(dataObject: DataObject) { build = { $0 } }
    func toDataObject() -> DataObject { build(DataObject(self)) }
}

/// A model whose data object nests itself.
final class NestsItself: Storable {
    var dataObject: DataObject?
    init() {}
    required init(dataObject: DataObject) {}
    func toDataObject() -> DataObject { dataObject ?? DataObject(self) }
}

/// A data object being built is written as JSON as fields are added (`ObjectBuilder`), and
/// falls back to a tree for what that cannot take: both must store exactly what a tree would.
@Suite("Building data objects")
struct ObjectBuilderTests {
    func json(_ build: @escaping (DataObject) -> DataObject) -> String? {
        Built(build).toDataObject().toRawString()
    }

    @Test func aRepeatedKeyReplacesItsValueWhereItWas() {
        #expect(json { $0.add(key: "a", value: 1).add(key: "b", value: "x").add(key: "a", value: 2) } == #"{"object":"Built","a":2,"b":"x"}"#)
        // Past the builder's limit of fields, in the tree.
        let many = json { object in
            for index in 0..<40 { object.add(key: "f\(index)", value: index) }
            return object.add(key: "f3", value: -3).add(key: "f39", value: -39)
        }
        let expected = "{\"object\":\"Built\"," + (0..<40).map { "\"f\($0)\":\($0 == 3 ? -3 : $0 == 39 ? -39 : $0)" }.joined(separator: ",") + "}"
        #expect(many == expected)
        // Repeated while the builder still holds the fields: a key among the first 16 it keeps
        // in place, and one beyond them.
        let twenty = json { object in
            for index in 0..<20 { object.add(key: "f\(index)", value: index) }
            return object.add(key: "f18", value: -18).add(key: "f2", value: -2)
        }
        #expect(twenty == "{\"object\":\"Built\"," + (0..<20).map { "\"f\($0)\":\($0 == 2 ? -2 : $0 == 18 ? -18 : $0)" }.joined(separator: ",") + "}")
    }

    @Test func keysTheBuilderDoesNotTakeAreStillOneKeyEach() throws {
        let nfc = "caf\u{E9}", nfd = "cafe\u{301}"
        for (first, second) in [("K", "\u{212A}"), ("\u{212A}", "K"), (nfc, nfd), (nfd, nfc)] {
            let text = try #require(json { $0.add(key: first, value: "one").add(key: "plain", value: 1).add(key: second, value: "two") })
            #expect(!text.contains("one") && text.components(separatedBy: "two").count == 2 && text.contains("plain"))
            #expect(DataObject(rawString: text).get(second) == "two")
        }
        let odd = ["", "object", "~object", "quo\"te", "back\\slash", "new\nline", "tab\there", "\u{1F600}"]
        let text = try #require(json { object in
            for (index, key) in odd.enumerated() { object.add(key: key, value: index) }
            return object
        })
        let parsed = DataObject(rawString: text)
        for (index, key) in odd.enumerated() { #expect(parsed.get(key) == index, "\(key)") }
        #expect(parsed.className == "Built")
    }

    @Test func unencodableValuesAreFoundWhereverTheyAre() async throws {
        let bad = Date(timeIntervalSince1970: .infinity)
        #expect(json { $0.add(key: "ok", value: 1).add(key: "when", value: bad) } == nil)
        try await withDatabase { database, _ in
            let flat = Built { $0.add(key: "ok", value: 1).add(key: "when", value: bad) }
            let flatError = await #expect(throws: LocalDatabaseError.self) { try await database.write(Record(id: "flat", data: flat)) }
            #expect(flatError?.unencodable?.id == "flat" && flatError?.unencodable?.path == "when")
            let nested = Built { $0.add(key: "child", value: Built { $0.add(key: "ok", value: "x").add(key: "when", value: bad) }) }
            let nestedError = await #expect(throws: LocalDatabaseError.self) { try await database.write(Record(id: "nested", data: nested)) }
            #expect(nestedError?.unencodable?.path == "child.when")
            let count = try await database.count()
            #expect(count == 0)
        }
    }

    @Test func nestedObjectsAndArraysOfThemAreWrittenInPlace() {
        let text = json { object in
            object.add(key: "one", value: Built { $0.add(key: "n", value: 1) })
                .add(key: "many", value: [Built { $0.add(key: "n", value: 2) }, Built { $0 }])
                .add(key: "some", value: [Built { $0.add(key: "n", value: 3) }, nil])
                .add(key: "none", value: nil as Built?)
        }
        #expect(text == #"{"object":"Built","one":{"object":"Built","n":1},"many":[{"object":"Built","n":2},{"object":"Built"}],"some":[{"object":"Built","n":3},null],"none":null}"#)
    }

    @Test func aDataObjectNestedInItselfIsCopied() {
        let model = NestsItself()
        let object = DataObject(model)
        model.dataObject = object
        object.add(key: "me", value: model).add(key: "us", value: [model])
        #expect(object.toRawString() == #"{"object":"NestsItself","me":{"object":"NestsItself"},"us":[{"object":"NestsItself","me":{"object":"NestsItself"}}]}"#)
    }

    @Test func readingWhileBuildingAndAddingAfterwards() {
        let object = Built { $0 }.toDataObject()
        object.add(key: "a", value: 1)
        #expect(object.get("a") == 1)
        object.add(key: "b", value: "x").add(key: "a", value: 3)
        #expect(object.toRawString() == #"{"object":"Built","a":3,"b":"x"}"#)
        #expect(object.get("b") == "x" && object.className == "Built")
    }
}

/// An element whose initializer changes the data object it is nested in, and reads it again.
final class Meddler: Storable {
    nonisolated(unsafe) static var parent: DataObject?
    init() {}
    required init(dataObject: DataObject) {
        Meddler.parent?.add(key: "after", value: 99)
        _ = Meddler.parent.map { $0.get("before") as Int }  // Its storage is read from new bytes now.
    }
    func toDataObject() -> DataObject { DataObject(self) }
}

@Suite("Data objects changed while read", .serialized)
struct ChangedWhileReadTests {
    /// Reading an array of nested objects whose initializers change the parent: the parent's
    /// next lookup must find the field in its new bytes, not at a place found in the old ones.
    /// The spaces put the old place of `after` where the new bytes hold `"Xafter"`, whose
    /// `after"` would be taken for the key.
    @Test func aParentChangedByItsElementsReadsItsNewFields() throws {
        let spaces = String(repeating: " ", count: 18)
        let text = #"{"object":"X","before":1,"items":[{"object":"Meddler"}],"# + spaces + #""after":2,"pad":"Xafter","last":3}"#
        let parent = DataObject(rawString: text)
        Meddler.parent = parent
        defer { Meddler.parent = nil }
        #expect(parent.get("before") == 1)
        #expect(parent.getObjectArray("items", type: Meddler.self).count == 1)
        #expect(parent.toRawString() == #"{"object":"X","before":1,"items":[{"object":"Meddler"}],"after":99,"pad":"Xafter","last":3}"#)
        #expect(parent.get("after") == 99)
        #expect(parent.get("pad") == "Xafter")
        #expect(parent.get("last") == 3)
    }
}

/// A model that, when `poison` is stored, adds a date that cannot be stored to the data object
/// it is read from (and reads it, turning it into bytes), and otherwise keeps that data object.
final class Poisoner: Storable {
    let kept: DataObject?
    init(poison: Bool) {
        kept = nil
        self.poison = poison
    }
    let poison: Bool
    required init(dataObject: DataObject) {
        poison = dataObject.get("poison")
        if poison {
            dataObject.add(key: "bad", value: Date(timeIntervalSince1970: .infinity))
            _ = dataObject.get("poison") as Bool
            kept = nil
        } else {
            kept = dataObject
        }
    }
    func toDataObject() -> DataObject { DataObject(self).add(key: "poison", value: poison) }
}

@Suite("Reused data objects")
struct ReusedDataObjectTests {
    /// The data object a model did not keep is reused for the next record: what the last model
    /// did to it (a value that cannot be stored) must not stay with it.
    @Test func aReusedDataObjectForgetsTheLastModelsUnstorableValue() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "a", data: Poisoner(poison: true)))
            try await database.write(Record(id: "b", data: Poisoner(poison: false)))
            let read: [Poisoner] = try await database.read()
            #expect(read.count == 2)
            let kept = try #require(read.first { !$0.poison }?.kept)
            #expect(kept.toRawString() == #"{"object":"Poisoner","poison":false}"#)
        }
    }
}

/// Odd values written by the builder (the path every hand-written model takes) read back
/// exactly: signs of zero, NaN and infinities, extreme numbers, strings with control
/// characters, NUL and emoji, and dates off the millisecond.
final class OddValues: Storable {
    let doubles: [Double]
    let double: Double
    let ints: [Int]
    let text: String
    let date: Date
    init(doubles: [Double], double: Double, ints: [Int], text: String, date: Date) {
        (self.doubles, self.double, self.ints, self.text, self.date) = (doubles, double, ints, text, date)
    }
    required init(dataObject: DataObject) {
        doubles = dataObject.get("doubles")
        double = dataObject.get("double")
        ints = dataObject.get("ints")
        text = dataObject.get("text")
        date = dataObject.get("date")
    }
    func toDataObject() -> DataObject {
        DataObject(self).add(key: "doubles", value: doubles).add(key: "double", value: double)
            .add(key: "ints", value: ints).add(key: "text", value: text).add(key: "date", value: date)
    }
}

@Suite("Odd values through the builder")
struct OddValueBuilderTests {
    @Test func oddValuesReadBackBitForBit() async throws {
        let doubles: [Double] = [-0.0, 0.0, .nan, .infinity, -.infinity, .greatestFiniteMagnitude, .leastNonzeroMagnitude, -1e-300, 0.1]
        let text = "nul\u{0} tab\t quote\" slash\\ bell\u{7} e\u{301} 😀 \u{FFFF}"
        let date = Date(timeIntervalSince1970: 1_700_000_000.123_456_7)
        try await withDatabase { database, _ in
            for (index, double) in doubles.enumerated() {
                let model = OddValues(doubles: doubles, double: double, ints: [.min, -1, 0, .max], text: text, date: date)
                try await database.write(Record(id: "odd-\(index)", data: model))
                let read = try #require(try await database.read(id: "odd-\(index)") as OddValues?)
                #expect(read.double.bitPattern == double.bitPattern || (read.double.isNaN && double.isNaN), "\(double)")
                #expect(read.doubles.map(\.isNaN) == doubles.map(\.isNaN))
                #expect(zip(read.doubles, doubles).allSatisfy { $0.bitPattern == $1.bitPattern || ($0.isNaN && $1.isNaN) })
                #expect(read.ints == [.min, -1, 0, .max])
                #expect(Array(read.text.utf8) == Array(text.utf8))
                #expect(read.date == date)
            }
        }
    }
}

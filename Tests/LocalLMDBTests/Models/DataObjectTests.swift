import Foundation
import LocalLMDB
import LocalLMDBTestSupport
import Testing

/// Every field type the seed lists, for round trips.
final class Everything: Storable {
    var string = ""
    var optionalString: String?
    var strings: [String] = []
    var optionalStrings: [String?] = []
    var int = 0
    var optionalInt: Int?
    var ints: [Int] = []
    var optionalInts: [Int?] = []
    var double = 0.0
    var optionalDouble: Double?
    var doubles: [Double] = []
    var optionalDoubles: [Double?] = []
    var bool = false
    var optionalBool: Bool?
    var bools: [Bool] = []
    var optionalBools: [Bool?] = []
    var date = Date(timeIntervalSince1970: 0)
    var optionalDate: Date?
    var dates: [Date] = []
    var optionalDates: [Date?] = []
    var child: Homework?
    var children: [Homework] = []
    var optionalChildren: [Homework?] = []

    init() {}

    required init(dataObject d: DataObject) {
        string = d.get("string")
        optionalString = d.get("optionalString")
        strings = d.get("strings")
        optionalStrings = d.get("optionalStrings")
        int = d.get("int")
        optionalInt = d.get("optionalInt")
        ints = d.get("ints")
        optionalInts = d.get("optionalInts")
        double = d.get("double")
        optionalDouble = d.get("optionalDouble")
        doubles = d.get("doubles")
        optionalDoubles = d.get("optionalDoubles")
        bool = d.get("bool", onFail: false)
        optionalBool = d.get("optionalBool")
        bools = d.get("bools")
        optionalBools = d.get("optionalBools")
        date = d.get("date")
        optionalDate = d.get("optionalDate")
        dates = d.get("dates")
        optionalDates = d.get("optionalDates")
        child = d.getObjectOptional("child", type: Homework.self)
        children = d.getObjectArray("children", type: Homework.self)
        optionalChildren = d.getObjectArray("optionalChildren", type: Homework.self)
    }

    func toDataObject() -> DataObject {
        DataObject(self)
            .add(key: "string", value: string)
            .add(key: "optionalString", value: optionalString)
            .add(key: "strings", value: strings)
            .add(key: "optionalStrings", value: optionalStrings)
            .add(key: "int", value: int)
            .add(key: "optionalInt", value: optionalInt)
            .add(key: "ints", value: ints)
            .add(key: "optionalInts", value: optionalInts)
            .add(key: "double", value: double)
            .add(key: "optionalDouble", value: optionalDouble)
            .add(key: "doubles", value: doubles)
            .add(key: "optionalDoubles", value: optionalDoubles)
            .add(key: "bool", value: bool)
            .add(key: "optionalBool", value: optionalBool)
            .add(key: "bools", value: bools)
            .add(key: "optionalBools", value: optionalBools)
            .add(key: "date", value: date)
            .add(key: "optionalDate", value: optionalDate)
            .add(key: "dates", value: dates)
            .add(key: "optionalDates", value: optionalDates)
            .add(key: "child", value: child)
            .add(key: "children", value: children)
            .add(key: "optionalChildren", value: optionalChildren)
    }
}

@Suite("DataObject")
struct DataObjectTests {
    @Test func everyFieldTypeRoundTripsThroughTheDatabase() async throws {
        try await withDatabase { database, _ in
            let original = Everything()
            original.string = "quote \" backslash \\ newline \n tab \t nul \u{0} bell \u{7} 日本 🎉 \u{2028}"
            original.optionalString = "present"
            original.strings = ["a", "", "ü"]
            original.optionalStrings = ["a", nil, "c"]
            original.int = Int.min
            original.optionalInt = Int.max
            original.ints = [0, -1, 1 << 53 + 1]
            original.optionalInts = [nil, 5]
            original.double = 0.1 + 0.2
            original.optionalDouble = -0.0
            original.doubles = [1e-300, 5e300, 188.0, .pi, Double.leastNonzeroMagnitude, Double.greatestFiniteMagnitude]
            original.optionalDoubles = [nil, 2.5]
            original.bool = true
            original.optionalBool = false
            original.bools = [true, false]
            original.optionalBools = [nil, true]
            original.date = Date(timeIntervalSince1970: 1_744_520_305.123)
            original.optionalDate = Date(timeIntervalSince1970: -86_400 * 365.25 * 100 + 0.5)
            original.dates = [Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 253_402_300_799.999)]
            original.optionalDates = [nil, Date(timeIntervalSince1970: 1)]
            original.child = Homework(answers: "child", grade: 3)
            original.children = [Homework(answers: "x", grade: nil)]
            original.optionalChildren = [nil, Homework(answers: "y", grade: 1)]
            try await database.write(Record(id: "e", data: original))

            let read = try #require(try await database.read(id: "e") as Everything?)
            #expect(read.string == original.string)
            #expect(read.optionalString == "present")
            #expect(read.strings == original.strings)
            #expect(read.optionalStrings == original.optionalStrings)
            #expect(read.int == Int.min)
            #expect(read.optionalInt == Int.max)
            #expect(read.ints == original.ints)
            #expect(read.optionalInts == original.optionalInts)
            #expect(read.double == 0.1 + 0.2)
            #expect(read.optionalDouble == 0 && read.optionalDouble?.sign == .minus)
            #expect(read.doubles == original.doubles)
            #expect(read.optionalDoubles == original.optionalDoubles)
            #expect(read.bool == true)
            #expect(read.optionalBool == false)
            #expect(read.bools == original.bools)
            #expect(read.optionalBools == original.optionalBools)
            #expect(read.date == original.date)
            #expect(read.optionalDate == original.optionalDate)
            #expect(read.dates == original.dates)
            #expect(read.optionalDates == original.optionalDates)
            #expect(read.child?.answers == "child")
            #expect(read.children.map(\.answers) == ["x"])
            // Arrays of objects drop their nil elements on reading.
            #expect(read.optionalChildren.map { $0?.answers } == ["y"])
        }
    }

    @Test func theJSONKeepsTheClassNameAndInsertionOrder() throws {
        let homework = Homework(answers: "a", grade: 2)
        let raw = try #require(homework.toDataObject().toRawString())
        #expect(raw == #"{"object":"Homework","answers":"a","grade":2}"#)
        let parsed = try #require(JSONSerialization.jsonObject(with: Data(raw.utf8)) as? [String: Any])
        #expect(parsed["object"] as? String == "Homework")
        let replaced = DataObject(homework).add(key: "b", value: 1).add(key: "a", value: 2).add(key: "b", value: 3)
        #expect(replaced.toRawString() == #"{"object":"Homework","b":3,"a":2}"#)
        #expect(replaced.className == "Homework")
        #expect(replaced.rawData == Data(#"{"object":"Homework","b":3,"a":2}"#.utf8))
    }

    @Test func missingAndMistypedFieldsGiveDefaults() {
        let object = DataObject(rawString: #"{"object":"Everything","string":5,"int":"five","double":true,"bool":"yes","strings":"no","ints":[1,"two",3],"date":"yesterday","optionalInts":[1,"x",null]}"#)
        let read = Everything(dataObject: object)
        #expect(read.string == "")
        #expect(read.int == 0)
        #expect(read.double == 0.0)
        #expect(read.bool == false)
        #expect(read.strings == [])
        #expect(read.ints == [1, 3])
        #expect(read.optionalInts == [1, nil, nil])
        #expect(read.optionalString == nil)
        #expect(read.date == Date(timeIntervalSince1970: 0) || abs(read.date.timeIntervalSinceNow) < 60)
        #expect(read.child == nil)
        #expect(object.get("missing", onFail: "MISSING") == "MISSING")
        #expect(object.get("missing", onFail: 7) == 7)
        #expect(object.get("missing", onFail: true) == true)
        let missingDate: Date? = object.get("date")
        #expect(missingDate == nil)
        let empty: [Int] = object.get("missing")
        #expect(empty.isEmpty)
    }

    @Test func numbersConvertWhenExact() {
        let object = DataObject(rawString: #"{"whole":3.0,"fraction":3.5,"int":4}"#)
        #expect(object.get("whole") as Int == 3)
        #expect(object.get("fraction") as Int == 0)
        #expect(object.get("int") as Double == 4.0)
        // 1e400 does not fit a Double: the document is rejected rather than read as infinity.
        #expect(throws: LocalDatabaseError.self) { _ = try DataObject(validating: #"{"object":"X","huge":1e400}"#) }
        #expect(DataObject(rawString: #"{"object":"X","huge":1e400}"#).className == nil)
        for huge in ["9e999", "1" + String(repeating: "0", count: 250) + "e99", "-" + String(repeating: "9", count: 400), "12345678901234567e300"] {
            #expect(throws: LocalDatabaseError.self, "\(huge)") { _ = try DataObject(validating: #"{"n":"# + huge + "}") }
        }
        let fits = try? DataObject(validating: #"{"n":1.5e99,"m":-1e-300,"k":"# + String(repeating: "9", count: 300) + "}")
        #expect(fits?.get("n") as Double? == 1.5e99)
        #expect(fits?.get("m") as Double? == -1e-300)
        #expect(fits?.get("k") as Double? == 1e300)
        let big = DataObject(rawString: #"{"big":18446744073709551616}"#)
        #expect(big.get("big") as Int == 0)
        #expect(big.get("big") as Double == 18446744073709551616.0)
    }

    @Test func repeatedKeysKeepTheLastValue() {
        let object = DataObject(rawString: #"{"a":1,"b":2,"a":3,"\u0062":4,"c":5}"#)
        #expect(object.get("a") as Int == 3)
        #expect(object.get("b") as Int == 4)
        #expect(object.get("c") as Int == 5)
        #expect(object.toRawString() == #"{"a":3,"b":4,"c":5}"#)
        // Out-of-order lookups find every field too.
        #expect(object.get("c") as Int == 5)
        #expect(object.get("a") as Int == 3)
        #expect(object.get("b") as Int == 4)
    }

    @Test func legacyKeysAreSearchedInOrder() {
        let object = DataObject(rawString: #"{"oldest":"1","older":"2"}"#)
        #expect(object.get("name", legacyKeys: ["older", "oldest"]) == "2")
        #expect(object.get("name", legacyKeys: ["missing", "oldest"]) == "1")
    }

    @Test func seedDateStringsParse() throws {
        let object = DataObject(rawString: #"{"a":"2025-04-13T14:58:25.123+10:00","b":"2025-04-13T04:58:25.123Z","c":"2025-04-13T04:58:25Z","d":"2025-04-13T04:58:25.1234567-0130"}"#)
        let a: Date? = object.get("a")
        let b: Date? = object.get("b")
        let c: Date? = object.get("c")
        let d: Date? = object.get("d")
        #expect(a == b)
        #expect(b?.timeIntervalSince1970 == 1_744_520_305.123)
        #expect(c?.timeIntervalSince1970 == 1_744_520_305)
        // More than three digits: read exactly (whole seconds since 2001 plus the fraction).
        #expect(d?.timeIntervalSinceReferenceDate == Double(1_744_520_305 + 5400 - 978_307_200) + 0.1234567)
        let written = DataObject(Homework(answers: "", grade: nil)).add(key: "when", value: Date(timeIntervalSince1970: 1_744_520_305.123))
        #expect(written.toRawString()?.contains(#""when":"2025-04-13T04:58:25.123Z""#) == true)
    }

    @Test func invalidRawStringsGiveAnEmptyObjectOrAnError() {
        for bad in ["", "not json", "[1,2]", #"{"a":}"#, #"{"a":"\ud800"}"#, "{\"a\":1} trailing"] {
            let object = DataObject(rawString: bad)
            #expect(object.className == nil)
            #expect(object.toRawString() == "{}")
            #expect(throws: LocalDatabaseError.self) { _ = try DataObject(validating: bad) }
        }
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: LocalDatabaseError.self) { _ = try DataObject(validating: #"{"a":"# + deep + "}") }
        #expect(throws: Never.self) { _ = try DataObject(validating: #"{"a":[1,{"b":null}],"c":"\u00e9\ud83c\udf89"}"#) }
    }

    @Test func nestedSubclassesAreRestoredAsThemselves() {
        // A Person-typed field holding a Student comes back as a Student.
        let holder = DataObject(rawString: #"{"object":"X","p":{"object":"Student","firstName":"S","debt":2.5,"teacher":{"object":"Teacher","salary":3}}}"#)
        _ = makeStudent("registers Student and Teacher").toDataObject()
        let person = holder.getObject("p", type: Person.self)
        let student = person as? Student
        #expect(student?.debt == 2.5)
        #expect(student?.teacher.salary == 3)
        // An unknown class name falls back to the requested class.
        let unknown = DataObject(rawString: #"{"p":{"object":"NoSuchClass","firstName":"U"}}"#)
        #expect(type(of: unknown.getObject("p", type: Person.self)) == Person.self)
        // An unrelated class name also falls back to the requested class.
        let unrelated = DataObject(rawString: #"{"p":{"object":"Homework","firstName":"H"}}"#)
        #expect(type(of: unrelated.getObject("p", type: Person.self)) == Person.self)
        // A missing nested object is built from defaults.
        #expect(unknown.getObject("missing", type: Person.self).firstName == "")
    }

    @Test func writerOutputIsAcceptedByJSONSerialization() throws {
        let everything = Everything()
        everything.string = "\u{1}\u{1f}\"\\/ é 🎉"
        everything.doubles = [.infinity, .nan, 1.5]
        let raw = try #require(everything.toDataObject().toRawString())
        let parsed = try #require(JSONSerialization.jsonObject(with: Data(raw.utf8)) as? [String: Any])
        #expect(parsed["string"] as? String == everything.string)
        // Non-finite doubles have no JSON form: they are written as null.
        #expect((parsed["doubles"] as? [Any])?.count == 3)
    }
}

/// A model that keeps the data objects it was restored from, which LocalLMDB must then copy
/// out of LMDB's map before the read ends.
final class Keeper: Storable {
    let text: String
    let kept: DataObject
    let child: Keeper?

    init(text: String, child: Keeper?) {
        self.text = text
        self.child = child
        self.kept = DataObject(rawString: "{}")
    }

    required init(dataObject: DataObject) {
        text = dataObject.get("text")
        kept = dataObject
        child = dataObject.getObjectOptional("child", type: Keeper.self)
    }

    func toDataObject() -> DataObject {
        DataObject(self).add(key: "text", value: text).add(key: "child", value: child)
    }
}

/// Keeps the data objects of an array of nested objects.
final class KeeperShelf: Storable {
    let items: [Keeper]

    init(items: [Keeper]) {
        self.items = items
    }

    required init(dataObject: DataObject) {
        items = dataObject.getObjectArray("items", type: Keeper.self)
    }

    func toDataObject() -> DataObject {
        DataObject(self).add(key: "items", value: items)
    }
}

@Suite("Data objects that outlive their read")
struct KeptDataObjectTests {
    @Test func keptDataObjectsStayValidAfterTheDataChanges() async throws {
        try await withDatabase { database, _ in
            let payload = String(repeating: "p", count: 500)
            for index in 0..<300 {
                try await database.write(Record(id: "k\(index)", data: Keeper(text: "\(index)-\(payload)", child: Keeper(text: "child \(index)", child: nil))))
            }
            let keepers: [Keeper] = try await database.read()
            let single: Keeper? = try await database.read(id: "k7")
            // Rewrite everything so the pages the records were read from are reused.
            #expect(try await database.clearDatabase() == 300)
            for index in 0..<300 {
                try await database.write(Record(id: "k\(index)", data: Keeper(text: String(repeating: "x", count: 600), child: nil)))
            }
            #expect(keepers.count == 300)
            for keeper in keepers {
                let index = try #require(Int(keeper.text.prefix { $0 != "-" }))
                #expect(keeper.kept.get("text") == "\(index)-\(payload)")
                #expect(keeper.child?.kept.get("text") == "child \(index)")
                #expect(keeper.kept.toRawString()?.contains("child \(index)") == true)
            }
            #expect(single?.kept.get("text") == "7-\(payload)")
        }
    }

    @Test func aReadDataObjectCanBeChangedAndWrittenAgain() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "a", data: Keeper(text: "first", child: nil)))
            let keeper: Keeper? = try await database.read(id: "a")
            let object = try #require(keeper?.kept)
            object.add(key: "text", value: "changed").add(key: "extra", value: 1)
            #expect(object.toRawString() == #"{"object":"Keeper","text":"changed","child":null,"extra":1}"#)
            let copy = Keeper(dataObject: DataObject(rawString: try #require(object.toRawString())))
            #expect(copy.text == "changed")
        }
    }

    @Test func keptDataObjectsOfArrayElementsStayValid() async throws {
        try await withDatabase { database, _ in
            let shelf = KeeperShelf(items: (0..<20).map { Keeper(text: "item \($0) " + String(repeating: "i", count: 300), child: nil) })
            try await database.write(Record(id: "shelf", data: shelf))
            let read: KeeperShelf? = try await database.read(id: "shelf")
            let all: [KeeperShelf] = try await database.read()
            // Overwrite it, and enough besides that the pages it was read from are reused.
            for round in 0..<4 {
                let filler = (0..<50).map { Record(id: "filler\($0)", data: Keeper(text: String(repeating: "z", count: 700 + round), child: nil)) }
                try await database.write(contentsOf: filler)
                try await database.write(Record(id: "shelf", data: KeeperShelf(items: [Keeper(text: String(repeating: "y", count: 9000), child: nil)])))
            }
            for copy in [read, all.first] {
                let items = try #require(copy?.items)
                #expect(items.count == 20)
                for (index, item) in items.enumerated() {
                    #expect(item.kept.get("text") == "item \(index) " + String(repeating: "i", count: 300))
                }
            }
        }
    }

    @Test func readsByIDThatReuseDataObjectsKeepWhatModelsKept() async throws {
        try await withDatabase { database, _ in
            let payload = String(repeating: "q", count: 400)
            for index in 0..<50 {
                try await database.write(Record(id: "e\(index)", data: Entry(sequence: index, payload: payload)))
                try await database.write(Record(id: "k\(index)", data: Keeper(text: "keeper \(index) \(payload)", child: Keeper(text: "child \(index)", child: nil))))
            }
            // Alternate models that let their data object go (so it is reused) with ones that keep it.
            var keepers: [Keeper] = []
            for index in 0..<50 {
                let entry: Entry? = try await database.read(id: "e\(index)")
                #expect(entry?.sequence == index && entry?.payload == payload)
                keepers.append(try #require(try await database.read(id: "k\(index)") as Keeper?))
            }
            // Reuse the pages the keepers were read from.
            #expect(try await database.clearDatabase() == 100)
            for batch in 0..<5 {
                try await database.write(contentsOf: (0..<40).map { Record(id: "z\(batch)-\($0)", data: Entry(sequence: $0, payload: String(repeating: "z", count: 700))) })
            }
            for (index, keeper) in keepers.enumerated() {
                #expect(keeper.kept.get("text") == "keeper \(index) \(payload)")
                #expect(keeper.child?.kept.get("text") == "child \(index)")
            }
        }
    }
}

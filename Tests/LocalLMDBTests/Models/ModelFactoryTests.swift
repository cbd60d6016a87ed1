import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import Testing

/// RSDSerialization's example model: a required Int and String, an optional Date.
struct CbRSDModel: Codable, Persistable, Equatable {
    var intValue: Int
    var stringValue: String
    var dateValue: Date?
}

struct CbImportCustomer: Codable, Persistable, Equatable {
    var name: String
    var since: Date
}

struct CbImportLine: Codable, Equatable {
    var sku: String
    var quantity: UInt16
    var shipped: [Date]
}

struct CbImportOrder: Codable, Persistable, Equatable {
    var number: Int
    var customer: CbImportCustomer
    var lines: [CbImportLine]
    var placed: Date
    var tags: [String: [Int]]?
    var note: String?
}

/// A web service's resource that names its own kind in a member `object` (as Stripe's API does).
struct CbForeignResource: Codable, Persistable, Equatable {
    var id: String
    var object: String
    var counts: [String: Int]
}

/// The numbers a web service may send.
struct CbImportNumbers: Codable, Persistable, Equatable {
    var double: Double
    var float: Float?
    var decimal: Decimal?
    var count: Int?
    var doubles: [Double]?
}

private func json(_ text: String) -> Data { Data(text.utf8) }

/// 2010-01-05T22:19:50Z.
private let rsdDate = Date(timeIntervalSince1970: 1_262_729_990)

@Suite("ModelFactory")
struct ModelFactoryTests {
    @Test func rsdSerializationsExampleBuildsBothModels() throws {
        let data = json(#"[{ "intValue": 7, "stringValue": "hello", "dateValue": "2010-01-05T22:19:50Z" }, { "intValue": 7, "stringValue": "hello" }]"#)
        let result = try ModelFactory.models(CbRSDModel.self, fromJSONArray: data)
        #expect(result.models == [
            CbRSDModel(intValue: 7, stringValue: "hello", dateValue: rsdDate), CbRSDModel(intValue: 7, stringValue: "hello", dateValue: nil),
        ])
        #expect(result.skipped.isEmpty)
        // With the pattern RSDSerialization used.
        let patterned = try ModelFactory.models(CbRSDModel.self, fromJSONArray: data, options: ImportOptions(dates: .pattern("yyyy-MM-dd'T'HH:mm:ssX")))
        #expect(patterned.models == result.models)
        // A null optional is nil too.
        let withNull = try ModelFactory.models(CbRSDModel.self, fromJSONArray: json(#"[{"intValue":1,"stringValue":"","dateValue":null}]"#))
        #expect(withNull.models == [CbRSDModel(intValue: 1, stringValue: "", dateValue: nil)])
    }

    @Test func invalidElementsAreSkippedAndReportedOrFailTheCall() async throws {
        let data = json(#"""
        [{"intValue":1,"stringValue":"a"},
         {"stringValue":"b"},
         {"intValue":"x","stringValue":"c"},
         {"intValue":3,"stringValue":"d","dateValue":"not a date"},
         {"intValue":4,"stringValue":null},
         7,
         {"intValue":5,"stringValue":"e","extra":[1,{"deep":true}]}]
        """#)
        let result = try ModelFactory.models(CbRSDModel.self, fromJSONArray: data)
        #expect(result.models.map(\.intValue) == [1, 5])
        #expect(result.skipped.map(\.index) == [1, 2, 3, 4, 5])
        #expect(result.skipped.map(\.path) == ["intValue", "intValue", "dateValue", "stringValue", ""])
        #expect(result.skipped.allSatisfy { !$0.reason.isEmpty })
        #expect(result.skipped[0].description.hasPrefix("element 1 at intValue: "))
        #expect(result.skipped[4].description.hasPrefix("element 5: "))

        let error = await caughtError {
            _ = try ModelFactory.models(CbRSDModel.self, fromJSONArray: data, options: ImportOptions(invalidElements: .fail))
        }
        guard case let .invalidElement(index, path, reason)? = error else {
            Issue.record("expected invalidElement, got \(String(describing: error))")
            return
        }
        #expect(index == 1 && path == "intValue" && reason == result.skipped[0].reason)
    }

    /// JSON from elsewhere is read as `JSONDecoder` reads it: a string is never a number, so
    /// `"NaN"` or `"Infinity"` (LocalLMDB's own stored forms of those doubles) where a `Double`,
    /// `Float` or `Decimal` is declared is a mistyped field, and a value decoded `Double` first
    /// keeps such a string as text.
    @Test func aStringIsNeverANumberInJSONFromElsewhere() throws {
        let spellings = ["NaN", "Infinity", "-Infinity", "NaN:0x7ff8000000000001"]
        for spelling in spellings {
            for (field, element) in [
                ("double", #"{"double":"\#(spelling)"}"#), ("float", #"{"double":1,"float":"\#(spelling)"}"#),
                ("decimal", #"{"double":1,"decimal":"\#(spelling)"}"#), ("doubles[1]", #"{"double":1,"doubles":[1,"\#(spelling)"]}"#),
            ] {
                let result = try ModelFactory.models(CbImportNumbers.self, fromJSONArray: json("[\(element)]"))
                #expect(result.models.isEmpty && result.skipped.map(\.path) == [field], "\(element): \(result.skipped)")
                #expect(throws: DecodingError.self) { _ = try JSONDecoder().decode([CbImportNumbers].self, from: json("[\(element)]")) }
            }
            let value = try ModelFactory.model(FidelityAny.self, fromJSON: json(#""\#(spelling)""#))
            #expect(value.same(.text(spelling)), "\(value)")
        }
        let numbers = try ModelFactory.models(CbImportNumbers.self, fromJSONArray: json(#"[{"double":1.5,"float":0.5,"decimal":2.25,"count":3,"doubles":[1e300,-0.0]}]"#))
        #expect(numbers.models == [CbImportNumbers(double: 1.5, float: 0.5, decimal: 2.25, count: 3, doubles: [1e300, -0.0])])
    }

    /// A number beyond `Double`'s range (`1e400`) in a field the model does not read leaves the
    /// response, and that element, as they are; in a field it reads, it is a mistyped field
    /// (never infinity): the element is reported, and the others are built.
    @Test func aNumberOutOfRangeIsAnErrorOnlyWhereItIsRead() async throws {
        let huge = "1" + String(repeating: "0", count: 400)
        let data = json(#"""
        [{"double":1,"ignored":1e400},
         {"double":1e400},
         {"double":2,"count":1e400},
         {"double":3,"extra":[-1e999,{"deep":123e45678}],"big":\#(huge)},
         {"double":4,"float":1e39},
         {"double":5,"decimal":-1e400},
         {"double":6,"doubles":[1,1e400]},
         {"double":7,"ignored":1e400,"ignored":2e400}]
        """#)
        let result = try ModelFactory.models(CbImportNumbers.self, fromJSONArray: data)
        #expect(result.models.map(\.double) == [1, 3, 7])
        #expect(result.skipped.map(\.index) == [1, 2, 4, 5, 6])
        #expect(result.skipped.map(\.path) == ["double", "count", "float", "decimal", "doubles[1]"])
        #expect(result.skipped.allSatisfy { $0.reason.contains("1e400") || $0.reason.contains("1e39") }, "\(result.skipped)")
        // One document, and one that repeats a key (read through a rewritten copy).
        #expect(try ModelFactory.model(CbImportNumbers.self, fromJSON: json(#"{"double":8,"ignored":1e400}"#)).double == 8)
        #expect(try ModelFactory.model(CbImportNumbers.self, fromJSON: json(#"{"double":9,"ignored":1e400,"double":10}"#)).double == 10)
        let error = await caughtError { _ = try ModelFactory.model(CbImportNumbers.self, fromJSON: json(#"{"double":-1e400,"double":-2e400}"#)) }
        #expect(error.map { if case .invalidElement(0, "double", _) = $0 { true } else { false } } == true, "\(String(describing: error))")
        // Not JSON at all is still refused whole.
        #expect(throws: LocalDatabaseError.self) { _ = try ModelFactory.models(CbImportNumbers.self, fromJSONArray: json(#"[{"double":1e}]"#)) }
    }

    @Test(arguments: [
        ("iso8601", DateFormat.iso8601, [#""2010-01-05T22:19:50Z""#, #""2010-01-05T23:19:50+01:00""#, #""2010-01-05T22:19:50.000Z""#], #"1262729990"#),
        ("secondsSince1970", .secondsSince1970, ["1262729990", "1262729990.0", "1.26272999e9"], #""2010-01-05T22:19:50Z""#),
        ("millisecondsSince1970", .millisecondsSince1970, ["1262729990000", "1262729990000.0"], #""1262729990000""#),
        ("pattern", .pattern("yyyy-MM-dd'T'HH:mm:ssX"), [#""2010-01-05T22:19:50Z""#, #""2010-01-05T23:19:50+01""#], #""2010-01-05""#),
        ("pattern without a zone, UTC", .pattern("dd/MM/yyyy HH:mm:ss"), [#""05/01/2010 22:19:50""#], #""2010-01-05T22:19:50Z""#),
        ("pattern in a time zone", .pattern("dd/MM/yyyy HH:mm:ss", timeZone: TimeZone(secondsFromGMT: -3600)!), [#""05/01/2010 21:19:50""#], "null"),
        ("custom", .custom { text in text.hasPrefix("unix:") ? Double(text.dropFirst(5)).map(Date.init(timeIntervalSince1970:)) : nil },
         [#""unix:1262729990""#], #""1262729990""#),
    ] as [(String, DateFormat, [String], String)])
    func eachDateFormatReadsItsDates(_ name: String, _ format: DateFormat, _ accepted: [String], _ refused: String) throws {
        let elements = (accepted + [refused]).map { #"{"intValue":1,"stringValue":"s","dateValue":\#($0)}"# }
        let result = try ModelFactory.models(CbRSDModel.self, fromJSONArray: json("[" + elements.joined(separator: ",") + "]"), options: ImportOptions(dates: format))
        if refused == "null" {
            #expect(result.models.count == accepted.count + 1 && result.models.last?.dateValue == nil, "\(name)")
        } else {
            #expect(result.models.count == accepted.count, "\(name): \(result.skipped)")
            #expect(result.skipped.map(\.index) == [accepted.count] && result.skipped.first?.path == "dateValue", "\(name)")
        }
        for (model, text) in zip(result.models, accepted) {
            #expect(model.dateValue == rsdDate, "\(name): \(text) read as \(String(describing: model.dateValue))")
        }
    }

    @Test func notAnArrayOrNotJSONIsInvalidJSON() async throws {
        for text in [#"{"intValue":1,"stringValue":"a"}"#, "7", #""text""#, "null"] {
            let error = await caughtError { _ = try ModelFactory.models(CbRSDModel.self, fromJSONArray: json(text)) }
            guard case .invalidJSON? = error else {
                Issue.record("\(text): expected invalidJSON, got \(String(describing: error))")
                continue
            }
        }
        let malformed = ["", "[", #"[{"intValue":1,"#, "[1,]", #"[{"a":1}] x"#, "[NaN]", "[{'a':1}]"].map(json) + [Data([0x5B, 0x22, 0xFF, 0x22, 0x5D])]
        for text in malformed {
            let error = await caughtError { _ = try ModelFactory.models(CbRSDModel.self, fromJSONArray: text) }
            guard case .invalidJSON? = error else {
                Issue.record("\(text): expected invalidJSON, got \(String(describing: error))")
                continue
            }
        }
        let empty = try ModelFactory.models(CbRSDModel.self, fromJSONArray: json(" [ ] "))
        #expect(empty.models.isEmpty && empty.skipped.isEmpty)
    }

    @Test func aRepeatedKeyKeepsItsLastValue() throws {
        let data = json(#"[{"intValue":1,"stringValue":"first","intValue":2,"stringValue":"last"},{"intValue":3,"stringValue":"x","dateValue":"bad","dateValue":null}]"#)
        let result = try ModelFactory.models(CbRSDModel.self, fromJSONArray: data)
        #expect(result.models == [CbRSDModel(intValue: 2, stringValue: "last", dateValue: nil), CbRSDModel(intValue: 3, stringValue: "x", dateValue: nil)])
        #expect(result.skipped.isEmpty)
        let nested = try ModelFactory.model(
            CbImportOrder.self,
            fromJSON: json(#"{"number":1,"customer":{"name":"a","name":"b","since":0},"lines":[],"placed":0,"number":2}"#), dates: .secondsSince1970)
        #expect(nested.number == 2 && nested.customer.name == "b")
    }

    @Test func nestedObjectsAndArraysUseTheDateFormatThroughout() throws {
        let data = json(#"""
        [{"number": 1,
          "customer": {"name": "Ada", "since": 1262729990},
          "lines": [{"sku": "a", "quantity": 2, "shipped": [1262729990, 0]}, {"sku": "b", "quantity": 65535, "shipped": []}],
          "placed": 1262729990.5,
          "tags": {"object": [1], "x": []},
          "unknown": {"ignored": [null]}},
         {"number": 2, "customer": {"name": "Bob", "since": 0}, "lines": [{"sku": "c", "quantity": 65536, "shipped": []}], "placed": 0},
         {"number": 3, "customer": {"name": "Cy", "since": "2010"}, "lines": [], "placed": 0},
         {"number": 4, "customer": {"name": "Di", "since": 0}, "lines": [{"sku": "d", "quantity": 1, "shipped": [0, "x"]}], "placed": 0}]
        """#)
        let result = try ModelFactory.models(CbImportOrder.self, fromJSONArray: data, options: ImportOptions(dates: .secondsSince1970))
        #expect(result.models.map(\.number) == [1])
        let order = try #require(result.models.first)
        #expect(order.customer == CbImportCustomer(name: "Ada", since: rsdDate))
        #expect(order.lines == [
            CbImportLine(sku: "a", quantity: 2, shipped: [rsdDate, Date(timeIntervalSince1970: 0)]), CbImportLine(sku: "b", quantity: 65535, shipped: []),
        ])
        #expect(order.placed == Date(timeIntervalSince1970: 1_262_729_990.5))
        #expect(order.tags?["x"] == [])
        #expect(result.skipped.map(\.index) == [1, 2, 3])
        #expect(result.skipped.map(\.path) == ["lines[0].quantity", "customer.since", "lines[0].shipped[1]"])
    }

    @Test func importedModelsAreWrittenAndReadBack() async throws {
        let data = json(#"""
        [{"number": 1, "customer": {"name": "Ada", "since": "2010-01-05T22:19:50Z"},
          "lines": [{"sku": "a", "quantity": 2, "shipped": ["2010-01-05T22:19:50.123Z"]}], "placed": "1970-01-01T00:00:00Z", "note": "n"},
         {"number": 2, "customer": {"name": "Bob", "since": "2010-01-05T23:19:50+01:00"}, "lines": [], "placed": "2010-01-05T22:19:50Z",
          "tags": {"t": [1, 2]}}]
        """#)
        let result = try ModelFactory.models(CbImportOrder.self, fromJSONArray: data)
        #expect(result.models.count == 2 && result.skipped.isEmpty)
        try await withBothFaces { database, sync in
            #expect(try await database.write(contentsOf: result.models.map { Record(id: "order-\($0.number)", data: $0) }) == 2)
            let read: [CbImportOrder] = try await database.read()
            #expect(read == result.models)
            #expect(sync.read(id: "order-2") == result.models[1])
            #expect(read.first?.lines.first?.shipped == [Date(timeIntervalSince1970: 1_262_729_990.123)])
            // Stored with the nested model's class name, as any nested model.
            let stored = try #require(try result.models[0]._storedFields().toRawString())
            #expect(stored.contains(#""customer":{"object":"CbImportCustomer","name":"Ada","since":"2010-01-05T22:19:50.000Z"}"#))
        }
    }

    @Test func oneDocumentBuildsOneModel() async throws {
        let model = try ModelFactory.model(CbRSDModel.self, fromJSON: json(#"{"intValue":7,"stringValue":"hello","dateValue":"2010-01-05T22:19:50Z"}"#))
        #expect(model == CbRSDModel(intValue: 7, stringValue: "hello", dateValue: rsdDate))
        let seconds = try ModelFactory.model(CbRSDModel.self, fromJSON: json(#"{"intValue":7,"stringValue":"","dateValue":1262729990}"#), dates: .secondsSince1970)
        #expect(seconds.dateValue == rsdDate)
        let missing = await caughtError { _ = try ModelFactory.model(CbRSDModel.self, fromJSON: json(#"{"intValue":7}"#)) }
        guard case let .invalidElement(index, path, _)? = missing else {
            Issue.record("expected invalidElement, got \(String(describing: missing))")
            return
        }
        #expect(index == 0 && path == "stringValue")
        let notJSON = await caughtError { _ = try ModelFactory.model(CbRSDModel.self, fromJSON: json("{")) }
        guard case .invalidJSON? = notJSON else {
            Issue.record("expected invalidJSON, got \(String(describing: notJSON))")
            return
        }
        // An array is not an object.
        let array = await caughtError { _ = try ModelFactory.model(CbRSDModel.self, fromJSON: json("[]")) }
        guard case .invalidElement(0, "", _)? = array else {
            Issue.record("expected invalidElement at the document, got \(String(describing: array))")
            return
        }
    }

    /// JSON from elsewhere is the service's, not LocalLMDB's stored form: a member named
    /// `object` is a field like any other, and `~object` is not a spelling of it.
    @Test func aForeignMemberNamedObjectIsAnOrdinaryField() async throws {
        let data = json(#"[{"id":"cus_1","object":"customer","counts":{"object":1,"b":2}}]"#)
        let result = try ModelFactory.models(CbForeignResource.self, fromJSONArray: data)
        #expect(result.skipped.isEmpty, "\(result.skipped)")
        #expect(result.models == [CbForeignResource(id: "cus_1", object: "customer", counts: ["object": 1, "b": 2])])
        struct CbForeignCounts: Decodable, Equatable {
            var counts: [String: Int]
        }
        let counts = try ModelFactory.models(CbForeignCounts.self, fromJSONArray: json(#"[{"counts":{"object":1,"b":2}}]"#))
        #expect(counts.models == [CbForeignCounts(counts: ["object": 1, "b": 2])], "\(counts.models)")
        let tilde = try ModelFactory.models(CbForeignResource.self, fromJSONArray: json(#"[{"id":"x","~object":"tilde","counts":{"~object":1}}]"#))
        #expect(tilde.models.isEmpty && tilde.skipped.first?.path == "object", "\(tilde.models)")
    }
}

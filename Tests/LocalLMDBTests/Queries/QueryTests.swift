import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import LocalLMDBTestSupport
import Testing

/// A hand-written model with every kind of index.
final class Customer: Storable {
    static let indexes: [Index] = [
        .on("email", unique: true), .on("address.city", "age"), .each("tags"), .on(.date("joined")), .on("score"),
    ]

    let name: String
    let email: String?
    let age: Int?
    let city: String?
    let tags: [String]
    let joined: Date?
    let score: Double?

    init(name: String, email: String? = nil, age: Int? = nil, city: String? = nil, tags: [String] = [], joined: Date? = nil, score: Double? = nil) {
        (self.name, self.email, self.age, self.city, self.tags, self.joined, self.score) = (name, email, age, city, tags, joined, score)
    }

    required init(dataObject: DataObject) {
        name = dataObject.get("name")
        email = dataObject.get("email")
        age = dataObject.get("age")
        city = dataObject.getObjectOptional("address", type: Address.self)?.city
        tags = dataObject.get("tags")
        joined = dataObject.get("joined")
        score = dataObject.get("score")
    }

    func toDataObject() -> DataObject {
        let object = DataObject(self).add(key: "name", value: name).add(key: "tags", value: tags)
        if let email { object.add(key: "email", value: email) }
        if let age { object.add(key: "age", value: age) }
        if let city { object.add(key: "address", value: Address(city: city)) }
        if let joined { object.add(key: "joined", value: joined) }
        if let score { object.add(key: "score", value: score) }
        return object
    }
}

final class Address: Storable {
    let city: String
    init(city: String) { self.city = city }
    required init(dataObject: DataObject) { city = dataObject.get("city") }
    func toDataObject() -> DataObject { DataObject(self).add(key: "city", value: city) }
}

/// A `Codable` model: the same declarations name its coding keys.
struct Product: Codable, Persistable, Equatable {
    static let indexes: [Index] = [.on("price"), .on("sku", unique: true), .on("name")]
    var sku: String
    var name: String
    var price: Decimal
}

@Suite("Queries and indexes")
struct QueryTests {
    static func customers() -> [Record<Customer>] {
        let base = Date(timeIntervalSince1970: 1_700_000_000)
        return [
            Record(id: "c1", data: Customer(name: "Ada", email: "ada@x", age: 36, city: "London", tags: ["math", "code"], joined: base, score: 9.5)),
            Record(id: "c2", data: Customer(name: "Alan", email: "alan@x", age: 41, city: "London", tags: ["code"], joined: base.addingTimeInterval(-86_400 * 400), score: -2)),
            Record(id: "c3", data: Customer(name: "Grace", email: "grace@x", age: 85, city: "New York", tags: ["navy", "code"], joined: base.addingTimeInterval(0.0005), score: 0)),
            Record(id: "c4", data: Customer(name: "Edsger", age: 72, city: "Austin", tags: [], score: .infinity)),
            Record(id: "c5", data: Customer(name: "Barbara", email: "barbara@x", city: "Boston", joined: Date(timeIntervalSince1970: -1e10), score: -.infinity)),
            Record(id: "c6", data: Customer(name: "Ken", email: "ken@x", age: 36, city: "London", tags: ["unix", "code", "unix"])),
        ]
    }

    @Test func equalityRangeAndOrderOnACompoundIndex() async throws {
        try await withDatabase { database, _ in
            #expect(try await database.write(contentsOf: Self.customers()) == 6)
            let london = try await database.read(Query(Customer.self).filter("address.city", .equals("London")).sorted(by: "age"))
            #expect(london.map(\.name) == ["Ada", "Ken", "Alan"])
            let older = try await database.read(Query(Customer.self).filter("address.city", .equals("London")).filter("age", .greaterThan(36)))
            #expect(older.map(\.name) == ["Alan"])
            let between = try await database.readIDs(Query(Customer.self).filter("address.city", .isIn(["London", "Austin"])).filter("age", .between(36, 72)))
            #expect(between == ["c4", "c1", "c6", "c2"])  // Austin first (city order), then London by age, then id
            let descending = try await database.read(Query(Customer.self).filter("address.city", .equals("London")).sorted(by: "age", descending: true).limit(2))
            #expect(descending.map(\.name) == ["Alan", "Ken"])
            #expect(try await database.count(Query(Customer.self).filter("address.city", .equals("London"))) == 3)
            #expect(try await database.count(Query(Customer.self).filter("address.city", .hasPrefix("New"))) == 1)
            #expect(try await database.exists(Query(Customer.self).filter("address.city", .equals("Paris"))) == false)
            let page2 = try await database.read(Query(Customer.self).sorted(by: "address.city").offset(2).limit(2))
            #expect(page2.map(\.name) == ["Ada", "Ken"])  // Austin, Boston, then London by age, then id
        }
    }

    @Test func numbersCompareByValueAcrossKinds() async throws {
        try await withDatabase { database, _ in
            _ = try await database.write(contentsOf: Self.customers())
            let scores = try await database.read(Query(Customer.self).sorted(by: "score")).map(\.name)
            // Missing first, then -∞, negatives, zero, positives, +∞.
            #expect(scores == ["Ken", "Barbara", "Alan", "Grace", "Ada", "Edsger"])
            #expect(try await database.readIDs(Query(Customer.self).filter("score", .lessThan(0))) == ["c5", "c2"])
            #expect(try await database.readIDs(Query(Customer.self).filter("score", .equals(0.0))) == ["c3"])
            #expect(try await database.readIDs(Query(Customer.self).filter("score", .equals(-0.0))) == ["c3"])
            #expect(try await database.readIDs(Query(Customer.self).filter("score", .isNil)) == ["c6"])
        }
    }

    @Test func datesCompareChronologically() async throws {
        try await withDatabase { database, _ in
            _ = try await database.write(contentsOf: Self.customers())
            let byDate = try await database.read(Query(Customer.self).filter("joined", .atLeast(Date(timeIntervalSince1970: -2e10))).sorted(by: "joined"))
            #expect(byDate.map(\.name) == ["Barbara", "Alan", "Ada", "Grace"])
            let after = try await database.readIDs(Query(Customer.self).filter("joined", .greaterThan(Date(timeIntervalSince1970: 1_700_000_000))))
            #expect(after == ["c3"])  // half a millisecond later
        }
    }

    @Test func multiEntryIndexFindsEachElementOnce() async throws {
        try await withDatabase { database, _ in
            _ = try await database.write(contentsOf: Self.customers())
            #expect(try await database.readIDs(Query(Customer.self).filter("tags", .equals("code"))) == ["c1", "c2", "c3", "c6"])
            #expect(try await database.readIDs(Query(Customer.self).filter("tags", .isIn(["unix", "math"]))) == ["c1", "c6"])
            #expect(try await database.count(Query(Customer.self).filter("tags", .isIn(["code", "unix"]))) == 4)
        }
    }

    @Test func aUniqueIndexRefusesASecondRecordAndStoresNothingOfTheBatch() async throws {
        try await withDatabase { database, _ in
            _ = try await database.write(contentsOf: Self.customers())
            await expectError({ $0 == .uniqueIndexViolation(className: "Customer", index: "email unique", ids: ["c1", "d2"]) }) {
                _ = try await database.write(contentsOf: [
                    Record(id: "d1", data: Customer(name: "New", email: "new@x")),
                    Record(id: "d2", data: Customer(name: "Copy", email: "ada@x")),
                ])
            }
            #expect(try await database.count(Customer.self) == 6)
            let ada: Customer? = try await database.read(id: "c1")
            #expect(ada?.email == "ada@x")
            // Rewriting the holder with its own value is no violation; moving the value is.
            #expect(try await database.write(Record(id: "c1", data: Customer(name: "Ada L.", email: "ada@x"))))
            #expect(try await database.write(Record(id: "c1", data: Customer(name: "Ada", email: "ada2@x"))))
            #expect(try await database.write(Record(id: "d2", data: Customer(name: "Copy", email: "ada@x"))))
            #expect(try await database.readIDs(Query(Customer.self).filter("email", .equals("ada@x"))) == ["d2"])
        }
    }

    @Test func everyWritePathKeepsTheIndexesExact() async throws {
        try await withDatabase { database, _ in
            _ = try await database.write(contentsOf: Self.customers())
            let londoners = Query(Customer.self).filter("address.city", .equals("London"))
            // Update that moves a record between values; delete; a class change.
            _ = try await database.write(Record(id: "c1", data: Customer(name: "Ada", email: "ada@x", age: 36, city: "Paris")))
            #expect(try await database.readIDs(londoners) == ["c6", "c2"])
            #expect(try await database.delete(id: "c6"))
            #expect(try await database.readIDs(londoners) == ["c2"])
            _ = try await database.write(Record(id: "c2", data: Note(text: "no longer a customer")))
            #expect(try await database.readIDs(londoners).isEmpty)
            // A rolled-back transaction leaves them as they were; a committed one changes them.
            try await database.startTransaction()
            _ = try await database.write(Record(id: "t1", data: Customer(name: "T", city: "London")))
            #expect(try await database.readIDs(londoners) == ["t1"])  // read your writes
            try await database.rollbackTransaction()
            #expect(try await database.readIDs(londoners).isEmpty)
            try await database.startTransaction()
            _ = try await database.write(Record(id: "t1", data: Customer(name: "T", city: "London")))
            try await database.commitTransaction()
            #expect(try await database.readIDs(londoners) == ["t1"])
            // Deleting the type, and clearing, empty them; the definitions stay.
            #expect(try await database.delete(Customer.self) == 5)
            #expect(try await database.count(Query(Customer.self).filter("tags", .equals("code"))) == 0)
            _ = try await database.write(contentsOf: Self.customers())
            #expect(try await database.count(londoners) == 3)
            _ = try await database.clearDatabase()
            #expect(try await database.count(londoners) == 0)
            _ = try await database.write(contentsOf: Self.customers())
            #expect(try await database.count(londoners) == 3)
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }

    @Test func writesThatDoNotDeclareTheIndexesKeepThemExact() async throws {
        try await withDatabase { database, _ in
            _ = try await database.write(contentsOf: Self.customers())
            #expect(try await database.count(Query(Customer.self).filter("address.city", .equals("London"))) == 3)
            // As another process whose code declares no index would: straight to the engine.
            let maxKeySize = database.engine.maxKeySize
            _ = try await database.engine.perform(
                RecordEncoding.put(Record(id: "x", data: Customer(name: "X", email: "x@x", city: "London")), maxKeySize: maxKeySize, encryption: nil))
            _ = try await database.engine.perform(.delete(StorageKey("c1", maxKeySize: maxKeySize)))
            #expect(try await database.readIDs(Query(Customer.self).filter("address.city", .equals("London")).sorted(by: "age")) == ["x", "c6", "c2"])
        }
    }

    @Test func aBatchsRecordsAreFoundThroughTheirIndexes() async throws {
        try await withDatabase { database, _ in
            // One batch, then a range on one index and a count on another. (An index built over
            // records already stored: IndexPartsAndBuildTests and CountedIndexTests.)
            _ = try await database.write(contentsOf: (0..<50).map { Record(id: "p\($0)", data: Product(sku: "s\($0)", name: "n\($0 % 5)", price: Decimal($0) / 4)) })
            let cheap = try await database.read(Query(Product.self).filter("price", .lessThan(Decimal(1))).sorted(by: "price", descending: true))
            #expect(cheap.map(\.sku) == ["s3", "s2", "s1", "s0"])
            #expect(try await database.count(Query(Product.self).filter("name", .equals("n2"))) == 10)
        }
    }

    @Test func queriesWithoutAnIndexScanWithTheSameResults() async throws {
        try await withDatabase { database, _ in
            _ = try await database.write(contentsOf: Self.customers())
            let byName = try await database.readIDs(Query(Customer.self).filter("name", .hasPrefix("A")).sorted(by: "name"))
            #expect(byName == ["c1", "c2"])
            await expectError({ if case .invalidQuery = $0 { true } else { false } }) {
                _ = try await database.read(Query(Customer.self).filter("age", .greaterThan(1)).filter("score", .lessThan(3)))
            }
            let all = try await database.readIDs(Query(Customer.self))
            #expect(all == ["c1", "c2", "c3", "c4", "c5", "c6"])
        }
    }

    @Test func theSynchronousFaceQueriesToo() async throws {
        try await withTemporaryDirectory { directory in
            let database = try SerializationDatabase(directory: directory.appendingPathComponent("db"))
            #expect(database.write(contentsOf: Self.customers()) == 6)
            #expect(database.readIDs(Query(Customer.self).filter("tags", .equals("code"))) == ["c1", "c2", "c3", "c6"])
            #expect(database.count(Query(Customer.self).filter("age", .atMost(40))) == 2)  // age is second in its index: a scan
            #expect(database.first(Query(Customer.self).sorted(by: "address.city"))?.name == "Edsger")
            #expect(!database.write(Record(id: "z", data: Customer(name: "Z", email: "ken@x"))))
            #expect(database.lastError == .uniqueIndexViolation(className: "Customer", index: "email unique", ids: ["c6", "z"]))
        }
    }

    @Test func longValuesAreIndexedExactly() async throws {
        try await withDatabase { database, _ in
            let long = String(repeating: "x", count: 600)
            _ = try await database.write(contentsOf: [
                Record(id: "a", data: Customer(name: "A", email: long + "a")),
                Record(id: "b", data: Customer(name: "B", email: long + "b")),
                Record(id: "c", data: Customer(name: "C", email: long)),
            ])
            #expect(try await database.readIDs(Query(Customer.self).filter("email", .equals(long + "b"))) == ["b"])
            #expect(try await database.readIDs(Query(Customer.self).filter("email", .equals(long))) == ["c"])
            #expect(try await database.count(Query(Customer.self).filter("email", .hasPrefix(long))) == 3)
            #expect(try await database.count(Query(Customer.self).filter("email", .greaterThan(long))) == 2)
            await expectError({ if case .uniqueIndexViolation = $0 { true } else { false } }) {
                _ = try await database.write(Record(id: "d", data: Customer(name: "D", email: long + "a")))
            }
        }
    }
}

/// A model whose one field holds any JSON value, for the value order's edge cases.
struct Mixed: Codable, Persistable {
    static let indexes: [Index] = [.on("value")]
    var value: MixedValue
}

enum MixedValue: Codable {
    case number(Double)
    case text(String)
    case integer(UInt64)
    case decimal(Decimal)
    case none

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case let .number(value): try container.encode(value)
        case let .text(value): try container.encode(value)
        case let .integer(value): try container.encode(value)
        case let .decimal(value): try container.encode(value)
        case .none: try container.encodeNil()
        }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .none } else if let text = try? container.decode(String.self) { self = .text(text) } else { self = .number(try container.decode(Double.self)) }
    }
}

@Suite("The value order's edge cases")
struct ValueOrderTests {
    @Test func oddValuesKeepTheirPlaceAndNeverMerge() async throws {
        try await withDatabase { database, _ in
            let values: [(String, MixedValue)] = [
                ("nan", .number(.nan)), ("inf", .number(.infinity)), ("ninf", .number(-.infinity)),
                ("zero", .number(0)), ("nzero", .number(-0.0)), ("text123", .text("123")), ("num123", .number(123)),
                ("big1", .integer(UInt64(1) << 60)), ("big2", .integer((UInt64(1) << 60) + 1)), ("textNaN", .text("NaN")),
                ("dec", .decimal(Decimal(string: "0.1")!)), ("none", .none), ("tiny", .number(1e-300)), ("ntiny", .number(-1e-300)),
            ]
            _ = try await database.write(contentsOf: values.map { Record(id: $0.0, data: Mixed(value: $0.1)) })
            let order = try await database.readIDs(Query(Mixed.self).sorted(by: "value"))
            #expect(order == ["none", "ninf", "ntiny", "nzero", "zero", "tiny", "dec", "num123", "big1", "big2", "inf", "nan", "text123", "textNaN"])
            // A string that reads as a number is not that number; NaN finds NaN; -0.0 is 0.
            #expect(try await database.readIDs(Query(Mixed.self).filter("value", .equals(123))) == ["num123"])
            #expect(try await database.readIDs(Query(Mixed.self).filter("value", .equals("123"))) == ["text123"])
            #expect(try await database.readIDs(Query(Mixed.self).filter("value", .equals(Double.nan))) == ["nan"])
            #expect(try await database.readIDs(Query(Mixed.self).filter("value", .equals("NaN"))) == ["textNaN"])
            #expect(try await database.readIDs(Query(Mixed.self).filter("value", .equals((UInt64(1) << 60) + 1))) == ["big2"])
            #expect(try await database.readIDs(Query(Mixed.self).filter("value", .equals(Decimal(string: "0.10")!))) == ["dec"])
        }
    }

    @Test func aCancelledStreamEnds() async throws {
        try await withDatabase { database, _ in
            _ = try await database.write(contentsOf: (0..<1000).map { Record(id: "t\($0)", data: Ticket(queue: "q", priority: $0, title: "")) })
            let read = Task {
                var count = 0
                for try await _ in database.stream(Query(Ticket.self), batchSize: 10) {
                    count += 1
                    if count == 15 { withUnsafeCurrentTask { $0?.cancel() } }
                }
                return count
            }
            #expect(try await read.value == 20)  // the batch read before the cancellation is given out
        }
    }
}

extension ValueOrderTests {
    @Test func datesOfEveryFormSortInTime() async throws {
        try await withDatabase { database, _ in
            // Expanded years on both sides of 0000–9999, a date between milliseconds (seven fraction
            // digits), whole milliseconds, and the reference date's -0.0.
            let dates: [(String, Date)] = [
                ("y10000", Date(timeIntervalSince1970: 253_402_300_800 + 86_400 * 40)),
                ("bc", Date(timeIntervalSince1970: -62_230_000_000)),
                ("fine", Date(timeIntervalSince1970: 1_700_000_000.000_123_4)),
                ("ms", Date(timeIntervalSince1970: 1_700_000_000.001)),
                ("epoch", Date(timeIntervalSince1970: 0)),
                ("reference", Date(timeIntervalSinceReferenceDate: -0.0)),
            ]
            _ = try await database.write(contentsOf: dates.map { Record(id: $0.0, data: Customer(name: $0.0, joined: $0.1)) })
            let expected = dates.sorted { $0.1 < $1.1 }.map(\.0)
            let sorted = try await database.readIDs(Query(Customer.self).filter("joined", .atLeast(Date(timeIntervalSince1970: -1e12))).sorted(by: "joined"))
            #expect(sorted == expected, "\(sorted) vs \(expected)")
            // A bound itself before year 1: the BC date is after it, and before Date.distantPast.
            #expect(try await database.readIDs(Query(Customer.self).filter("joined", .lessThan(Date.distantPast))) == ["bc"])
            #expect(try await database.readIDs(Query(Customer.self).filter("joined", .equals(dates[0].1))) == ["y10000"])
            #expect(try await database.readIDs(Query(Customer.self).filter("joined", .greaterThan(dates[3].1))) == ["y10000"])
            #expect(try await database.readIDs(Query(Customer.self).filter("joined", .between(dates[2].1, dates[3].1))) == ["fine", "ms"])
        }
    }
}

/// A model before and after a rename, for pages in the order of record keys.
final class PagedBefore: Storable {
    let key: String
    init(key: String) { self.key = key }
    required init(dataObject: DataObject) { key = dataObject.get("key") }
    func toDataObject() -> DataObject { DataObject(self).add(key: "key", value: key) }
}

final class PagedAfter: Storable {
    let key: String
    init(key: String) { self.key = key }
    required init(dataObject: DataObject) { key = dataObject.get("key") }
    func toDataObject() -> DataObject { DataObject(self).add(key: "key", value: key) }
}

@Suite("Pages of a class in the order of record keys")
struct KeyOrderPageTests {
    /// A query of no fields walks `types` from the cursor, merging a model's current and legacy
    /// class names; its pages, offsets and limits are the stored ids in the order of their bytes.
    @Test func pagesWalkTheClassesFromTheCursor() async throws {
        try await withDatabase { database, _ in
            var random = SplitMix(seed: 7)
            let ids = (0..<600).map { index in "\(["a", "B", "é", "z", "a\u{0}"].randomElement(using: &random) ?? "a")\(index * 7919 % 600)" }
            _ = try await database.write(contentsOf: ids.prefix(300).map { Record(id: $0, data: PagedBefore(key: $0)) })
            Legacy.addClassRefactor(old: "PagedBefore", new: "PagedAfter")
            defer { Legacy.removeClassRefactor(old: "PagedBefore") }
            _ = try await database.write(contentsOf: ids.suffix(300).map { Record(id: $0, data: PagedAfter(key: $0)) })
            for id in ids.enumerated().filter({ $0.offset % 11 == 0 }).map(\.element) { _ = try await database.delete(id: id) }
            // Another class's records are not the model's.
            _ = try await database.write(contentsOf: (0..<50).map { Record(id: "other\($0)", data: Ticket(queue: "q", priority: $0, title: "")) })
            let expected = ids.enumerated().filter { $0.offset % 11 != 0 }.map(\.element).sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }

            for limit in [1, 7, 100, 1000] {
                var seen: [String] = []
                var cursor: QueryCursor?
                repeat {
                    let page = try await database.readPage(Query(PagedAfter.self).limit(limit).after(cursor))
                    #expect(page.records.count <= limit)
                    seen += page.records.map(\.key)
                    cursor = page.next
                } while cursor != nil
                #expect(seen == expected, "pages of \(limit)")
            }
            #expect(try await database.read(Query(PagedAfter.self)).map(\.key) == expected)
            #expect(try await database.readIDs(Query(PagedAfter.self)) == expected)
            #expect(try await database.readIDs(Query(PagedAfter.self).offset(45).limit(30)) == Array(expected[45..<75]))
            #expect(try await database.readIDs(Query(PagedAfter.self).offset(540)) == Array(expected.dropFirst(540)))
            #expect(try await database.read(Query(PagedAfter.self).limit(0)).isEmpty)
            #expect(try await database.count(Query(PagedAfter.self)) == expected.count)
        }
    }
}

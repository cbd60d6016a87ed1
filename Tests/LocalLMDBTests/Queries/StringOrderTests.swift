import Foundation
@testable import LocalLMDB
import LocalLMDBTestSupport
import Testing

/// A string field, indexed alone and with a second field.
struct NulText: Codable, Persistable {
    static let indexes: [Index] = [.on("v"), .on("v", "w")]
    var v: String
    var w: Int
}

/// The same fields with no index: its queries are served by a scan, which must mean the same.
struct NulTextScanned: Codable, Persistable {
    var v: String
    var w: Int
}

/// A string field declared a date, and a double field.
struct DatedValue: Codable, Persistable {
    static let indexes: [Index] = [.on(.date("when")), .on("number")]
    var when: Date
    var number: Double
}

/// The documented order of strings: the bytes of their UTF-8 in canonical composition (NFC).
private func composed(_ string: String) -> [UInt8] {
    Array(string.precomposedStringWithCanonicalMapping.utf8)
}

/// Strings with U+0000 at every position, a string and the strings it starts with, escapes that
/// reach the key-size limit (a key of more than 479 bytes is shortened), and one string in two
/// normalizations.
private let nulValues: [String] = {
    let zeros = String(repeating: "\u{0}", count: 300)
    return [
        "", "\u{0}", "\u{0}\u{0}", "\u{0}a", "a", "a\u{0}", "a\u{0}\u{0}", "a\u{0}a", "a\u{1}", "ab", "b",
        zeros, zeros + "a", zeros + "\u{0}", String(repeating: "\u{0}", count: 299), "\u{E9}", "e\u{301}", "e",
    ]
}()

/// The ids of the values, `r00`…: their byte order is their order.
private func nulID(_ index: Int) -> String { "r" + (index < 10 ? "0" : "") + String(index) }

/// The ids whose values meet `holds`, in the order a query gives them: by value, then by id.
private func expectedIDs(_ holds: ([UInt8]) -> Bool, descending: Bool = false) -> [String] {
    let matching = nulValues.indices.filter { holds(composed(nulValues[$0])) }
    let sorted = matching.sorted { left, right in
        let (l, r) = (composed(nulValues[left]), composed(nulValues[right]))
        return l != r ? l.lexicographicallyPrecedes(r) : left < right
    }.map(nulID)
    return descending ? sorted.reversed() : sorted
}

/// Every condition on strings for every value: name, condition, what it holds for.
private func stringConditions() -> [(String, QueryCondition, ([UInt8]) -> Bool)] {
    var conditions: [(String, QueryCondition, ([UInt8]) -> Bool)] = []
    for value in nulValues {
        let bytes = composed(value)
        let name = value.debugDescription.count > 40 ? "\(value.utf8.count) bytes" : value.debugDescription
        conditions += [
            ("= \(name)", .equals(value), { $0 == bytes }),
            ("< \(name)", .lessThan(value), { $0.lexicographicallyPrecedes(bytes) }),
            ("<= \(name)", .atMost(value), { !bytes.lexicographicallyPrecedes($0) }),
            ("> \(name)", .greaterThan(value), { bytes.lexicographicallyPrecedes($0) }),
            (">= \(name)", .atLeast(value), { !$0.lexicographicallyPrecedes(bytes) }),
            ("prefix \(name)", .hasPrefix(value), { $0.starts(with: bytes) }),
        ]
    }
    for (first, second) in [("", "a"), ("a", "\u{0}"), ("a\u{0}", "b"), ("\u{0}a", "\u{E9}")] {
        let chosen = [composed(first), composed(second)]
        conditions.append(("in [\(first.debugDescription), \(second.debugDescription)]", .isIn([first, second]), { chosen.contains($0) }))
    }
    return conditions
}

@Suite("Strings with U+0000, and query limits, on every path")
struct StringOrderTests {
    /// Strings that differ by U+0000 are distinct values, ordered by their bytes: every bound and
    /// prefix, on the index and by a scan, counted and read, ascending and descending, and on a
    /// compound index, through the asynchronous face.
    @Test func stringsWithZeroBytesMatchByTheirBytes() async throws {
        try await withDatabase { database, _ in
            try await database.write(contentsOf: nulValues.indices.map { Record(id: nulID($0), data: NulText(v: nulValues[$0], w: $0)) })
            try await database.write(contentsOf: nulValues.indices.map { Record(id: "s" + nulID($0).dropFirst(), data: NulTextScanned(v: nulValues[$0], w: $0)) })
            for (name, condition, holds) in stringConditions() {
                let expected = expectedIDs(holds)
                let indexed = try await database.readIDs(Query(NulText.self).filter("v", condition))
                #expect(indexed == expected, "indexed: \(name)")
                #expect(try await database.count(Query(NulText.self).filter("v", condition)) == expected.count, "count: \(name)")
                let scanned = try await database.readIDs(Query(NulTextScanned.self).filter("v", condition))
                #expect(scanned == expected.map { "s" + $0.dropFirst() }, "scanned: \(name)")
                #expect(try await database.count(Query(NulTextScanned.self).filter("v", condition)) == expected.count, "scanned count: \(name)")
                // Descending, on the index.
                let descending = try await database.readIDs(Query(NulText.self).filter("v", condition).sorted(by: "v", descending: true))
                #expect(descending == expectedIDs(holds, descending: true), "descending: \(name)")
                // The compound index, for equalities with a range on its second field.
                if name.hasPrefix("=") || name.hasPrefix("in") {
                    let compound = try await database.readIDs(Query(NulText.self).filter("v", condition).filter("w", .atLeast(0)))
                    #expect(compound.sorted() == expected.sorted(), "compound: \(name)")
                }
            }
            // Keyset pages over every value, two at a time, both ways: each once, in order.
            for descending in [false, true] {
                var paged: [String] = []
                var cursor: QueryCursor?
                repeat {
                    let query = Query(NulText.self).sorted(by: "v", descending: descending).limit(2).after(cursor)
                    let page = try await database.readPage(query)
                    paged += try await database.readIDs(query)
                    #expect(page.records.map(\.w) == paged.suffix(page.records.count).compactMap { Int($0.dropFirst()) })
                    cursor = page.next
                } while cursor != nil
                #expect(paged == expectedIDs({ _ in true }, descending: descending), "pages, descending \(descending)")
            }
        }
    }

    /// The same through the synchronous face.
    @Test func stringsWithZeroBytesMatchByTheirBytesSynchronously() async throws {
        try await withTemporaryDirectory { directory in
            let database = try SerializationDatabase(directory: directory.appendingPathComponent("db"))
            #expect(database.write(contentsOf: nulValues.indices.map { Record(id: nulID($0), data: NulText(v: nulValues[$0], w: $0)) }) == nulValues.count)
            for (name, condition, holds) in stringConditions() {
                let expected = expectedIDs(holds)
                #expect(database.readIDs(Query(NulText.self).filter("v", condition)) == expected, "sync: \(name)")
                #expect(database.count(Query(NulText.self).filter("v", condition)) == expected.count, "sync count: \(name)")
            }
            #expect(database.lastError == nil)
        }
    }

    /// `first` and `exists` keep a query's limit of zero, as `read` and `count` do, on both faces.
    @Test func aLimitOfZeroSelectsNothingInEveryMethod() async throws {
        try await withDatabase { database, directory in
            try await database.write(Record(id: "one", data: NulText(v: "a", w: 1)))
            let none = Query(NulText.self).limit(0)
            #expect(try await database.read(none).isEmpty)
            #expect(try await database.count(none) == 0)
            #expect(try await database.first(none) == nil)
            #expect(try await database.exists(none) == false)
            #expect(try await database.readIDs(none).isEmpty)
            // A limit above one, and none, still find it.
            #expect(try await database.first(Query(NulText.self).limit(5))?.v == "a")
            #expect(try await database.exists(Query(NulText.self)))
            await database.close()
            let sync = try SerializationDatabase(directory: directory)
            #expect(sync.first(none) == nil)
            #expect(sync.exists(none) == false)
            #expect(sync.count(none) == 0)
            #expect(sync.first(Query(NulText.self))?.v == "a")
            #expect(sync.exists(Query(NulText.self).limit(3)))
        }
    }

    /// `isIn` counts each value once, as the order compares them: an order after it is served.
    @Test func repeatedValuesOfIsInAreOneValue() async throws {
        try await withDatabase { database, _ in
            try await database.write(contentsOf: [
                Record(id: "x", data: NulText(v: "al", w: 3)), Record(id: "y", data: NulText(v: "al", w: 1)),
                Record(id: "z", data: NulText(v: "bo", w: 2)),
            ])
            #expect(try await database.readIDs(Query(NulText.self).filter("v", .isIn(["al", "al"])).sorted(by: "w")) == ["y", "x"])
            #expect(try await database.readIDs(Query(NulText.self).filter("v", .isIn(["al", "al"])).sorted(by: "w", descending: true)) == ["x", "y"])
            // Canonically equal strings are one value too.
            try await database.write(Record(id: "e", data: NulText(v: "\u{E9}", w: 0)))
            #expect(try await database.readIDs(Query(NulText.self).filter("v", .isIn(["\u{E9}", "e\u{301}"])).sorted(by: "w")) == ["e"])
            // Two distinct values still refuse an order they cannot follow.
            await expectError({ if case .invalidQuery = $0 { true } else { false } }) {
                _ = try await database.readIDs(Query(NulText.self).filter("v", .isIn(["al", "bo"])).sorted(by: "w"))
            }
        }
    }

    /// A field declared a date takes dates: a prefix or a string bound on it is an invalid query
    /// (as documented), never a silent scan of strings.
    @Test func stringConditionsOnADateFieldAreRefused() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "d", data: DatedValue(when: Date(timeIntervalSince1970: 0), number: 1)))
            for condition in [QueryCondition.hasPrefix("1970"), .lessThan("2000"), .atLeast("1960")] {
                await expectError({ if case .invalidQuery = $0 { true } else { false } }) {
                    _ = try await database.readIDs(Query(DatedValue.self).filter("when", condition))
                }
            }
            #expect(try await database.readIDs(Query(DatedValue.self).filter("when", .lessThan(Date(timeIntervalSince1970: 1)))) == ["d"])
        }
    }

    /// NaNs are values: each bit pattern its own, ordered by the pattern as an unsigned integer
    /// (signaling NaNs before `Double.nan`, payloads after, negative NaNs last), as documented.
    @Test func nansAreDistinctValuesOrderedByTheirBits() async throws {
        try await withDatabase { database, _ in
            let signaling = Double(bitPattern: 0x7FF0_0000_0000_0001)
            let payload = Double(bitPattern: 0x7FF8_0000_0000_0001)
            let numbers: [(String, Double)] = [("n1", -Double.nan), ("n2", payload), ("n3", .nan), ("n4", signaling), ("n5", .infinity), ("n6", 1)]
            try await database.write(contentsOf: numbers.map { Record(id: $0.0, data: DatedValue(when: Date(timeIntervalSince1970: 0), number: $0.1)) })
            #expect(try await database.readIDs(Query(DatedValue.self).sorted(by: "number")) == ["n6", "n5", "n4", "n3", "n2", "n1"])
            #expect(try await database.readIDs(Query(DatedValue.self).filter("number", .equals(Double.nan))) == ["n3"])
            #expect(try await database.readIDs(Query(DatedValue.self).filter("number", .equals(-Double.nan))) == ["n1"])
            #expect(try await database.readIDs(Query(DatedValue.self).filter("number", .equals(payload))) == ["n2"])
            #expect(try await database.readIDs(Query(DatedValue.self).filter("number", .greaterThan(Double.nan))) == ["n2", "n1"])
            // Decimal's NaN is stored as Double's: the same value.
            #expect(try await database.readIDs(Query(DatedValue.self).filter("number", .equals(Decimal.nan))) == ["n3"])
        }
    }
}

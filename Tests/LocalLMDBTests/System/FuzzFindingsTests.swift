import Foundation
@testable import LocalLMDB
@testable import LocalLMDBJSON
@testable import LocalLMDBStore
import LocalLMDBTestSupport
import Testing

/// A model reading numbers as doubles.
struct FuzzFoundDouble: Codable, Persistable {
    var x: Double
}

/// A model with a date, read in a pattern format.
struct FuzzFoundDay: Codable {
    var x: Double
    var day: Date
}

/// What the fuzz targets (`scripts/fuzz`, Fuzz/README.md) found, each input as the target
/// minimized it, kept as a test that failed before its fix.
@Suite("Fuzz findings")
struct FuzzFindingsTests {
    /// `number`: JSON's `-0` read as a `Double` was 0.0 (Swift's `Double("-0")` and `JSONDecoder`
    /// give -0.0), and a data object changed after reading it wrote `0` back.
    @Test func minusZeroKeepsItsSign() throws {
        let object = try DataObject(validating: #"{"x":-0,"y":1}"#)
        let x: Double = object.get("x")
        #expect(x.bitPattern == (-0.0 as Double).bitPattern)
        let model: FuzzFoundDouble = try ModelFactory.model(fromJSON: Data(#"{"x":-0}"#.utf8))
        #expect(model.x.bitPattern == (-0.0 as Double).bitPattern)
        object.add(key: "y", value: 2)
        // Read again from the edited object: still -0.0, and 0 as an integer.
        let edited: Double? = object.get("x")
        #expect(edited?.bitPattern == (-0.0 as Double).bitPattern)
        #expect(object.get("x") as Int? == 0)
        let written = try #require(object.toRawString())
        #expect(written.contains(#""x":-0"#) && !written.contains(#""x":0"#))
    }

    /// `number`: an integer of 16 to 19 digits that no `Double` holds exactly read as no number
    /// at all into a `Double` (while one of 20 digits read as the nearest double): it is the
    /// nearest double, as `Double(String)` and `JSONDecoder` give.
    @Test func longIntegersReadAsTheNearestDouble() throws {
        for text in ["1245678901234567890", "9007199254740993", "-9223372036854775807", "12345678901234567890123"] {
            let object = try DataObject(validating: #"{"x":\#(text)}"#)
            let x: Double? = object.get("x")
            #expect(x == Double(text), "\(text)")
            let model: FuzzFoundDouble = try ModelFactory.model(fromJSON: Data(#"{"x":\#(text)}"#.utf8))
            #expect(model.x == Double(text), "\(text)")
        }
    }

    /// `modelfactory`: a date in a pattern format (`DateFormat.pattern`) whose parse ends inside
    /// a character of several scalars stopped the process inside Foundation's `DateFormatter`
    /// ("Incorrect range"); it is a decoding error, and dates in the pattern still read.
    @Test func aPatternDateThatFoundationCannotReadIsAnError() throws {
        let json = Data(#"{"x":1,"day":"2025-01\#u{612}ls;6-00T00:00:00Z"}"#.utf8)
        #expect(throws: LocalDatabaseError.self) { let _: FuzzFoundDay = try ModelFactory.model(fromJSON: json, dates: .pattern("yyyy-MM-dd")) }
        let day: FuzzFoundDay = try ModelFactory.model(fromJSON: Data(#"{"x":1,"day":"2025-01-02"}"#.utf8), dates: .pattern("yyyy-MM-dd"))
        #expect(day.day == Date(timeIntervalSince1970: 1_735_776_000))
    }

    /// `rows`: a query cursor (or an index catalog row) whose length prefix is near `Int.max`
    /// trapped on an arithmetic overflow: a cursor an app hands back crashed the process. It is
    /// refused as not a cursor.
    @Test func aCursorWithAHugeLengthIsRefused() async throws {
        let hostile: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F, 0xFF]
        #expect(IndexCursor(encoded: hostile) == nil)
        let json = Data("\"\(Data(hostile).base64EncodedString())\"".utf8)
        #expect(throws: DecodingError.self) { _ = try JSONDecoder().decode(QueryCursor.self, from: json) }
        // An index definition whose path component claims as much.
        let definition: [UInt8] = [1, 0, 1, 0, 1] + hostile
        #expect(definition.withUnsafeBytes { IndexDefinition(parsing: $0) } == nil)
        // A cursor that does decode still pages as the query's own order says.
        try await withDatabase { database, _ in
            try await database.write(contentsOf: ["a", "b", "c"].map { Record(id: $0, data: NulText(v: $0, w: 0)) })
            let first = try await database.readPage(Query(NulText.self).sorted(by: "v").limit(1))
            let cursor = try JSONDecoder().decode(QueryCursor.self, from: try JSONEncoder().encode(try #require(first.next)))
            #expect(try await database.readIDs(Query(NulText.self).sorted(by: "v").after(cursor)) == ["b", "c"])
        }
    }
}

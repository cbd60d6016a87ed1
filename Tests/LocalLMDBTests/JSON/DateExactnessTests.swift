import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import Testing

/// Dates in a `Codable` model.
struct ExactDates: Codable, Persistable {
    var dates: [Date]
    var date: Date
}

/// Dates in a hand-written model.
final class ExactDatesByHand: Storable {
    let dates: [Date]
    let date: Date
    init(dates: [Date], date: Date) {
        (self.dates, self.date) = (dates, date)
    }
    required init(dataObject: DataObject) {
        dates = dataObject.get("dates")
        date = dataObject.get("date", onFail: .distantPast)
    }
    func toDataObject() -> DataObject {
        DataObject(self).add(key: "dates", value: dates).add(key: "date", value: date)
    }
}

@Suite("Dates stored exactly")
struct DateExactnessTests {
    /// SplitMix64: the same numbers on every run.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var mixed = state
            mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
            mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
            return mixed ^ (mixed >> 31)
        }
    }

    /// 65,010 intervals since the reference date: edges around zero (signed zeros, the least
    /// magnitudes, `0.3 - 0.1 - 0.2`, the doubles next to zero), the doubles on and next to every
    /// second boundary from -3 s to 3 s and at the Unix epoch, the millennium, 2^31 s and farther,
    /// nanosecond instants around them, nanosecond instants in the last second of 2000 (where
    /// the split into seconds and fraction was not exact), and random ones at every scale.
    static let intervals: [Double] = {
        var values: [Double] = [
            0, -0.0, .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .leastNormalMagnitude, -.leastNormalMagnitude,
            1e-300, -1e-300, 0.3 - 0.1 - 0.2, -(0.3 - 0.1 - 0.2), 1e-9, -1e-9, 0.5, -0.5, 0.3, -0.3, 0.999_999_999, -0.999_999_999,
        ]
        for start in [0.0, -0.0] {
            var up = start
            var down = start
            for _ in 0..<50 {
                up = up.nextUp
                down = down.nextDown
                values += [up, down]
            }
        }
        var boundaries: [Double] = (-3...3).map(Double.init)
        boundaries += [-978_307_200, -978_307_199, 978_307_200, 86_400, -86_400, 2_147_483_648, -2_147_483_648, 1e9, -1e9, 1e12, -1e12, 4.5e15, -4.5e15]
        for boundary in boundaries {
            var up = boundary
            var down = boundary
            values.append(boundary)
            for _ in 0..<100 {
                up = up.nextUp
                down = down.nextDown
                values += [up, down]
            }
            for step in 1...100 {
                let offset = Double(step) * 1e-9
                values += [boundary + offset, boundary - offset, boundary + offset * 1000, boundary - offset * 1000]
            }
        }
        var random = Generator(state: 2000)
        // Nanosecond instants in the last second of 2000, and the first of 2001.
        for _ in 0..<20_000 {
            let nanoseconds = Double(Int.random(in: 0..<1_000_000_000, using: &random))
            values += [-1 + nanoseconds / 1e9, nanoseconds / 1e9]
        }
        // Random intervals at every scale up to 2^62 s, either sign, with random low bits.
        while values.count < 65_010 {
            let exponent = Int.random(in: -60...61, using: &random)
            let significand = Double.random(in: 1..<2, using: &random)
            let value = Double(sign: Bool.random(using: &random) ? .minus : .plus, exponent: exponent, significand: significand)
            values.append(value)
        }
        return Array(values.prefix(65_010))
    }()

    /// How the intervals that did not come back the same changed: the count, and the first few.
    static func mismatches(_ read: [Date], _ written: [Double]) -> (count: Int, first: [String]) {
        var count = 0
        var first: [String] = []
        for (date, interval) in zip(read, written) where date.timeIntervalSinceReferenceDate.bitPattern != interval.bitPattern {
            count += 1
            if first.count < 5 { first.append("\(interval) came back \(date.timeIntervalSinceReferenceDate)") }
        }
        return (count + abs(read.count - written.count), first)
    }

    @Test func everyDateTextReadsBackAsTheSameDate() {
        #expect(Self.intervals.count == 65_010)
        var count = 0
        var first: [String] = []
        for interval in Self.intervals {
            let text = ISO8601Date.format(Date(timeIntervalSinceReferenceDate: interval))
            let read = text.flatMap(ISO8601Date.parse)?.timeIntervalSinceReferenceDate
            if read?.bitPattern != interval.bitPattern {
                count += 1
                if first.count < 5 { first.append("\(interval) as \(text ?? "nil") came back \(read.map { "\($0)" } ?? "nil")") }
            }
        }
        #expect(count == 0, "\(count) changed: \(first)")
    }

    /// The text earlier versions wrote for a date between milliseconds: the whole seconds, and
    /// the shortest digits of `interval` less its whole seconds.
    static func earlierText(_ interval: Double) -> String? {
        let whole = interval.rounded(.down)
        guard Int64(exactly: whole) != nil, let second = ISO8601Date.format(Date(timeIntervalSinceReferenceDate: whole)) else { return nil }
        let text = (interval - whole).description
        var digits: String
        if let exponentMark = text.firstIndex(of: "e") {
            let exponent = Int(text[text.index(after: exponentMark)...]) ?? 0
            digits = String(repeating: "0", count: max(0, -exponent - 1)) + text[..<exponentMark].filter { $0 != "." }
        } else {
            digits = text.split(separator: ".").last.map(String.init) ?? "0"
        }
        if digits.count < 4 { digits += String(repeating: "0", count: 4 - digits.count) }
        return second.prefix { $0 != "." } + "." + digits + "Z"
    }

    /// Dates stored by earlier versions read back as they were written, wherever those
    /// versions wrote them exactly (all but intervals in (-1, 0)).
    @Test func datesStoredByEarlierVersionsReadBackTheSame() {
        var count = 0
        var first: [String] = []
        for interval in Self.intervals where !(interval > -1 && interval < 0) && interval != 0 && abs(interval) < 1e15 {
            guard let text = Self.earlierText(interval) else { continue }
            if ISO8601Date.parse(text)?.timeIntervalSinceReferenceDate.bitPattern != interval.bitPattern {
                count += 1
                if first.count < 5 { first.append("\(interval) as \(text)") }
            }
        }
        #expect(count == 0, "\(count) changed: \(first)")
    }

    /// Every date comes back as the same `Date`, bit for bit (`-0.0` keeps its sign), through a
    /// `Codable` model and a hand-written one, alone and in arrays.
    @Test func everyDateComesBackBitForBitThroughBothKindsOfModel() async throws {
        let dates = Self.intervals.map(Date.init(timeIntervalSinceReferenceDate:))
        try await withDatabase { database, _ in
            try await database.write(Record(id: "codable", data: ExactDates(dates: dates, date: Date(timeIntervalSinceReferenceDate: 0.3 - 0.1 - 0.2))))
            try await database.write(Record(id: "hand", data: ExactDatesByHand(dates: dates, date: Date(timeIntervalSinceReferenceDate: -0.0))))
            let codable = try #require(try await database.read(id: "codable") as ExactDates?)
            let codableChanges = Self.mismatches(codable.dates, Self.intervals)
            #expect(codableChanges.count == 0, "\(codableChanges)")
            #expect(codable.date.timeIntervalSinceReferenceDate.bitPattern == (0.3 - 0.1 - 0.2).bitPattern)
            let hand = try #require(try await database.read(id: "hand") as ExactDatesByHand?)
            let handChanges = Self.mismatches(hand.dates, Self.intervals)
            #expect(handChanges.count == 0, "\(handChanges)")
            #expect(hand.date.timeIntervalSinceReferenceDate.bitPattern == (-0.0).bitPattern)
        }
    }
}

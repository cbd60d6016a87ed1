import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import LocalLMDBTestSupport
import Testing

struct CbHuge: Codable, Persistable {
    var ints: [Int]
    var strings: [String]
    var optionals: [Double?]
    var points: [CbPoint]
}

struct CbWide: Codable, Persistable, Equatable {
    var fields: [String: Int]
    var nested: [String: [String: String]]
}

/// A chain of links, whose length is counted without recursion (chains here are deep).
protocol CbChain: AnyObject {
    var next: Self? { get }
}

extension CbChain {
    var length: Int {
        var count = 1
        var link = self
        while let next = link.next {
            count += 1
            link = next
        }
        return count
    }
}

/// One link of a chain of nested objects.
final class CbLink: Codable, CbChain {
    let next: CbLink?
    init(length: Int) {
        next = length > 1 ? CbLink(length: length - 1) : nil
    }
}

/// A chain `length` links long under the record's object: nested `length + 1` levels deep.
struct CbDeepChain: Codable, Persistable {
    var root: CbLink
}

/// Arrays nested in arrays.
indirect enum CbNest: Codable, Equatable {
    case leaf(Int)
    case list([CbNest])

    static func depth(_ levels: Int) -> CbNest {
        var value = CbNest.leaf(levels)
        for _ in 0..<levels { value = .list([value]) }
        return value
    }
}

struct CbDeepArrays: Codable, Persistable, Equatable {
    var nest: [Int]
    var value: CbNest
}

/// A chain of models, each nested as a model of its own (with its class name).
final class CbModelLink: Codable, Persistable, CbChain {
    let next: CbModelLink?
    init(length: Int) {
        next = length > 1 ? CbModelLink(length: length - 1) : nil
    }
}

/// Containers nested `levels` deep under the record's object by a loop, with no recursion of the
/// model's own: each a nested container of the kind `way` says (`mixed`: the four in turn, from
/// keyed and unkeyed containers alike). Its decoding walks them back the same way, counting.
struct CbNesting: Codable, Persistable {
    enum Way: String, Codable, CaseIterable {
        case keyed, unkeyed, superKeyed, superUnkeyed, mixed
    }

    enum Key: String, CodingKey { case way, n }

    var way: Way
    var levels: Int

    /// The way the level below `level` is nested.
    private func step(_ level: Int) -> Way {
        way == .mixed ? Way.allCases[level % 4] : way
    }

    func encode(to encoder: any Encoder) throws {
        var keyed = encoder.container(keyedBy: Key.self)
        try keyed.encode(way, forKey: .way)
        var unkeyed: (any UnkeyedEncodingContainer)?
        for level in 0..<levels {
            switch (step(level), unkeyed) {
            case (.keyed, nil): keyed = keyed.nestedContainer(keyedBy: Key.self, forKey: .n)
            case (.keyed, var outer?): (keyed, unkeyed) = (outer.nestedContainer(keyedBy: Key.self), nil)
            case (.unkeyed, nil): unkeyed = keyed.nestedUnkeyedContainer(forKey: .n)
            case (.unkeyed, var outer?): unkeyed = outer.nestedUnkeyedContainer()
            case (.superKeyed, nil): keyed = keyed.superEncoder(forKey: .n).container(keyedBy: Key.self)
            case (.superKeyed, var outer?): (keyed, unkeyed) = (outer.superEncoder().container(keyedBy: Key.self), nil)
            case (.superUnkeyed, nil): unkeyed = keyed.superEncoder(forKey: .n).unkeyedContainer()
            case (.superUnkeyed, var outer?): unkeyed = outer.superEncoder().unkeyedContainer()
            case (.mixed, _): break
            }
        }
    }

    init(way: Way, levels: Int) {
        self.way = way
        self.levels = levels
    }

    init(from decoder: any Decoder) throws {
        var keyed = try decoder.container(keyedBy: Key.self)
        way = try keyed.decode(Way.self, forKey: .way)
        var unkeyed: (any UnkeyedDecodingContainer)?
        var levels = 0
        while unkeyed.map({ !$0.isAtEnd }) ?? keyed.contains(.n) {
            switch (way == .mixed ? Way.allCases[levels % 4] : way, unkeyed) {
            case (.keyed, nil): keyed = try keyed.nestedContainer(keyedBy: Key.self, forKey: .n)
            case (.keyed, var outer?): (keyed, unkeyed) = (try outer.nestedContainer(keyedBy: Key.self), nil)
            case (.unkeyed, nil): unkeyed = try keyed.nestedUnkeyedContainer(forKey: .n)
            case (.unkeyed, var outer?): unkeyed = try outer.nestedUnkeyedContainer()
            case (.superKeyed, nil): keyed = try keyed.superDecoder(forKey: .n).container(keyedBy: Key.self)
            case (.superKeyed, var outer?): (keyed, unkeyed) = (try outer.superDecoder().container(keyedBy: Key.self), nil)
            case (.superUnkeyed, nil): unkeyed = try keyed.superDecoder(forKey: .n).unkeyedContainer()
            case (.superUnkeyed, var outer?): unkeyed = try outer.superDecoder().unkeyedContainer()
            case (.mixed, _): break
            }
            levels += 1
        }
        self.levels = levels
    }
}

/// Objects nested `remaining` deep as `Encodable` values, each made as it is encoded: the value
/// holds a count only, so however deep it goes, it is released without recursion.
struct CbLevels: Codable {
    enum Key: String, CodingKey { case n }
    var remaining: Int

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        if remaining > 0 { try container.encode(CbLevels(remaining: remaining - 1), forKey: .n) }
    }

    init(remaining: Int) {
        self.remaining = remaining
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        remaining = try container.decodeIfPresent(CbLevels.self, forKey: .n).map { $0.remaining + 1 } ?? 0
    }
}

/// `CbLevels` under the record's object: nested `remaining + 2` levels deep.
struct CbValueNesting: Codable, Persistable {
    var root: CbLevels
}

/// A value passed on `remaining` times through single value containers: no container is
/// nested, but each pass is a level of recursion in the encoder.
struct CbPassThrough: Encodable {
    var remaining: Int

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if remaining > 0 { try container.encode(CbPassThrough(remaining: remaining - 1)) } else { try container.encode(0) }
    }
}

struct CbPassThroughModel: Encodable, Persistable {
    var value: CbPassThrough

    static func _restore(from dataObject: DataObject) throws -> CbPassThroughModel {
        CbPassThroughModel(value: CbPassThrough(remaining: 0))
    }
}

/// The hand-written chain (`FidelityChain`), counted without recursion as the Codable ones are.
extension FidelityChain: CbChain {}

/// Hand-written models nested `remaining` deep, each made as it is stored (as `CbLevels`).
final class CbHandWrittenLevels: Storable {
    let remaining: Int
    init(remaining: Int) {
        self.remaining = remaining
    }
    required init(dataObject: DataObject) {
        remaining = dataObject.getObjectOptional("next", type: CbHandWrittenLevels.self).map { $0.remaining + 1 } ?? 0
    }
    func toDataObject() -> DataObject {
        let fields = DataObject(self)
        return remaining > 0 ? fields.add(key: "next", value: CbHandWrittenLevels(remaining: remaining - 1)) : fields
    }
}

struct CbConcurrent: Codable, Persistable, Equatable, Identifiable {
    var id: String
    var task: Int
    var index: Int
    var payload: [String: Double]
}

@Suite("Codable models under stress")
struct CodableAdversarialTests {
    @Test func hundredThousandElementArraysRoundTrip() async throws {
        let count = 100_000
        let huge = CbHuge(
            ints: (0..<count).map { $0 &* 7_919 - count }, strings: (0..<count).map { "s\($0)" },
            optionals: (0..<count / 2).map { $0 % 3 == 0 ? nil : Double($0) / 8 }, points: (0..<2_000).map { CbPoint(x: $0, y: 0.5, label: nil) })
        try await withDatabase { database, _ in
            try await database.write(Record(id: "huge", data: huge))
            let read = try #require(try await database.read(id: "huge") as CbHuge?)
            #expect(read.ints == huge.ints)
            #expect(read.strings == huge.strings)
            #expect(read.optionals == huge.optionals)
            #expect(read.points == huge.points)
        }
    }

    @Test func wideModelsRoundTrip() async throws {
        var fields: [String: Int] = [:]
        for index in 0..<20_000 { fields["field\(index)"] = index }
        fields["object"] = -1
        fields["~object"] = -2
        var nested: [String: [String: String]] = [:]
        for index in 0..<500 { nested["n\(index)"] = ["a": "\(index)", "object": "o\(index)"] }
        let wide = CbWide(fields: fields, nested: nested)
        try await withBothFaces { database, sync in
            try await database.write(Record(id: "wide", data: wide))
            #expect(try await database.read(id: "wide") == wide)
            #expect(sync.read(id: "wide") == wide)
        }
    }

    @Test func manyModelsInOneBatch() async throws {
        let models = (0..<10_000).map { CbConcurrent(id: "m\($0)", task: 0, index: $0, payload: ["v": Double($0)]) }
        try await withDatabase { database, _ in
            #expect(try await database.write(contentsOf: models) == models.count)
            let read: [CbConcurrent] = try await database.read()
            #expect(read.count == models.count)
            #expect(Set(read.map(\.index)) == Set(models.map(\.index)))
            #expect(try await database.count(CbConcurrent.self) == models.count)
            #expect(try await database.delete(CbConcurrent.self) == models.count)
        }
    }

    /// 512 levels is the most any reader accepts; one more is refused at write time, naming
    /// where, and nothing is written.
    @Test func nestingIsStoredUpTo512LevelsAndRefusedBeyond() async throws {
        try await withBothFaces { database, sync in
            try await database.write(Record(id: "deepest", data: CbDeepChain(root: CbLink(length: 511))))
            let deepest = try #require(try await database.read(id: "deepest") as CbDeepChain?)
            #expect(deepest.root.length == 511)
            #expect((sync.read(id: "deepest") as CbDeepChain?)?.root.length == 511)

            let tooDeep = await caughtError { try await database.write(Record(id: "deep", data: CbDeepChain(root: CbLink(length: 512)))) }
            let failure = try #require(tooDeep?.unencodable, "\(String(describing: tooDeep))")
            #expect(failure.id == "deep")
            #expect(failure.path == "root" + String(repeating: ".next", count: 511), "\(failure.path.prefix(60))…")
            #expect(!sync.write(Record(id: "deep", data: CbDeepChain(root: CbLink(length: 600)))))
            #expect(sync.lastError?.unencodable?.id == "deep")

            // Arrays count as levels too. Synthesized enum coding stores `.list(x)` as {"list":{"_0":[x]}}
            // (3 levels) and `.leaf(n)` as {"leaf":{"_0":n}} (2): under the record's object, L lists
            // and a leaf reach 1 + 3L + 2 levels, 510 for L = 169 and 513 for L = 170.
            let arrays = CbDeepArrays(nest: [], value: .depth(169))
            try await database.write(Record(id: "arrays", data: arrays))
            #expect(try await database.read(id: "arrays") == arrays)
            await expectError({ $0.unencodable?.id == "arrays2" }) {
                try await database.write(Record(id: "arrays2", data: CbDeepArrays(nest: [], value: .depth(170))))
            }
            // In a batch, nothing is written.
            await expectError({ $0.unencodable?.id == "b2" }) {
                try await database.write(contentsOf: [
                    Record(id: "b1", data: CbDeepChain(root: CbLink(length: 3))), Record(id: "b2", data: CbDeepChain(root: CbLink(length: 1000))),
                ])
            }
            #expect(try await database.readIDs(CbDeepChain.self) == ["deepest"])
            #expect(try await database.count() == 2)
        }
    }

    /// Well beyond the limit: an error, not a crash. (A few thousand levels: the encoder
    /// recurses through the whole value, so far deeper values overflow the stack; see
    /// `nestingTensOfThousandsDeepIsAnErrorNotAStackOverflow`.)
    @Test func nestingFarBeyondTheLimitIsAnErrorNotACrash() async throws {
        try await withDatabase { (database, _) async throws in
            for length in [1_000, 2_000] {
                await expectError({ $0.unencodable?.id == "far" }) {
                    try await database.write(Record(id: "far", data: CbDeepChain(root: CbLink(length: length))))
                }
            }
            await expectError({ $0.unencodable?.id == "models" }) {
                try await database.write(Record(id: "models", data: CbModelLink(length: 2_000)))
            }
            #expect(try await database.count() == 0)
        }
    }

    /// Much further, in a child process (a stack overflow would end the process that runs it):
    /// the encoder must stop at the limit rather than recurse through the whole value.
    @Test func nestingTensOfThousandsDeepIsAnErrorNotAStackOverflow() async throws {
        try await withTemporaryDirectory { directory in
            let (status, lines) = try runHelper(["write-deep-codable", directory.path, "100000"], environment: ["SWIFT_BACKTRACE": "enable=no"])
            // The limit itself, the same way: refused, naming the path ("root" and 511 × ".next").
            let (limitStatus, limitLines) = try runHelper(["write-deep-codable", directory.path, "512"])
            #expect(limitStatus == 0 && limitLines == ["unencodable deep \(4 + 511 * 5)"], "\(limitLines)")
            #expect(status == 0 && lines.first?.hasPrefix("unencodable deep ") == true, "status \(status), output \(lines)")
            // Nothing was written either way.
            let database = try LocalDatabase(directory: directory)
            #expect(try await database.count() == 0)
        }
    }

    @Test func nestedModelsAreStoredUpTo512LevelsToo() async throws {
        try await withDatabase { (database, _) async throws in
            try await database.write(Record(id: "ok", data: CbModelLink(length: 512)))
            #expect((try await database.read(id: "ok") as CbModelLink?)?.length == 512)
            await expectError({ $0.unencodable?.id == "deep" }) {
                try await database.write(Record(id: "deep", data: CbModelLink(length: 513)))
            }
        }
    }

    /// However containers are nested (keyed, unkeyed, super encoders, nested `Encodable` values,
    /// all of them mixed), 512 levels are stored and read back, and one more is refused when
    /// written; so are tens of thousands, nested by a loop that does not recurse (which crashed:
    /// the containers were finished by recursion, and only nested values were counted).
    @Test func everyWayOfNestingIsStoredUpTo512LevelsAndRefusedBeyond() async throws {
        try await withBothFaces { database, sync in
            for way in CbNesting.Way.allCases {
                try await database.write(Record(id: "deepest", data: CbNesting(way: way, levels: 511)))
                #expect((try await database.read(id: "deepest") as CbNesting?)?.levels == 511, "\(way)")
                #expect((sync.read(id: "deepest") as CbNesting?)?.levels == 511, "\(way)")
                for levels in [512, 600, 20_000, 50_000] {
                    let error = await caughtError { try await database.write(Record(id: "deep", data: CbNesting(way: way, levels: levels))) }
                    #expect(error?.unencodable?.reason.contains("512") == true, "\(way), \(levels): \(String(describing: error))")
                    #expect(!sync.write(Record(id: "deep", data: CbNesting(way: way, levels: levels))), "\(way), \(levels)")
                    #expect(sync.lastError?.unencodable?.id == "deep")
                }
            }
            // Nested values: two levels for the record's object and `root`.
            try await database.write(Record(id: "values", data: CbValueNesting(root: CbLevels(remaining: 510))))
            #expect((try await database.read(id: "values") as CbValueNesting?)?.root.remaining == 510)
            for remaining in [511, 600, 20_000, 50_000] {
                await expectError({ $0.unencodable?.id == "deep" }) {
                    try await database.write(Record(id: "deep", data: CbValueNesting(root: CbLevels(remaining: remaining))))
                }
            }
            // Values passed on through single value containers nest nothing, but recurse as deep.
            try await database.write(Record(id: "passed", data: CbPassThroughModel(value: CbPassThrough(remaining: 100))))
            for remaining in [600, 50_000] {
                await expectError({ $0.unencodable?.id == "deep" }) {
                    try await database.write(Record(id: "deep", data: CbPassThroughModel(value: CbPassThrough(remaining: remaining))))
                }
            }
            #expect(try await database.readIDs(CbNesting.self) == ["deepest"])
            #expect(try await database.count() == 3)
        }
    }

    /// On a thread with Apple's secondary-thread stack (512 KiB), nesting far beyond the limit
    /// in every way is refused with a typed error, never a crash: the encoder stops at the limit,
    /// or sooner when the stack runs low (an unoptimized build takes several kilobytes a level),
    /// and so do hand-written models nested in one another. What is nested moderately is still
    /// stored and read back there.
    @Test func deepNestingIsATypedErrorOnA512KiBStack() async throws {
        try await withBothFaces { _, sync in
            let failures = await onThread {
                var failures: [String] = []
                func refused<T: Persistable>(_ model: T, _ label: String) {
                    if sync.write(Record(id: "deep", data: model)) || sync.lastError?.unencodable?.id != "deep" {
                        failures.append("\(label): \(String(describing: sync.lastError))")
                    }
                }
                for way in CbNesting.Way.allCases {
                    for levels in [600, 20_000, 50_000] { refused(CbNesting(way: way, levels: levels), "\(way) \(levels)") }
                    if !sync.write(Record(id: "moderate", data: CbNesting(way: way, levels: 40))) || (sync.read(id: "moderate") as CbNesting?)?.levels != 40 {
                        failures.append("\(way) 40: \(String(describing: sync.lastError))")
                    }
                    // At the limit: stored, or refused for the stack; never a crash.
                    if !sync.write(Record(id: "limit", data: CbNesting(way: way, levels: 511))), sync.lastError?.unencodable?.id != "limit" {
                        failures.append("\(way) 511: \(String(describing: sync.lastError))")
                    }
                }
                for remaining in [600, 20_000, 50_000] { refused(CbValueNesting(root: CbLevels(remaining: remaining)), "values \(remaining)") }
                for remaining in [600, 50_000] { refused(CbPassThroughModel(value: CbPassThrough(remaining: remaining)), "passed \(remaining)") }
                // Hand-written models nested in one another recurse through `add(key:value:)`.
                for remaining in [600, 20_000] { refused(CbHandWrittenLevels(remaining: remaining), "hand-written \(remaining)") }
                if !sync.write(Record(id: "moderate", data: CbHandWrittenLevels(remaining: 40)))
                    || (sync.read(id: "moderate") as CbHandWrittenLevels?)?.remaining != 40 {
                    failures.append("hand-written 40: \(String(describing: sync.lastError))")
                }
                if !sync.write(Record(id: "moderate", data: CbValueNesting(root: CbLevels(remaining: 40)))) {
                    failures.append("values 40: \(String(describing: sync.lastError))")
                }
                return failures
            }
            #expect(failures.isEmpty, "\(failures)")
            #expect(sync.read(id: "deep") as CbNesting? == nil)
        }
    }

    /// Reading is bounded too: a stored document nested 100,000 deep is refused by a Codable model
    /// and by a hand-written one, and records at the limit are read or refused with a typed error
    /// (never a crash) on a 512 KiB stack, by both kinds of model.
    @Test func deeplyNestedStoredRecordsAreATypedErrorWhenRead() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("db")
            var database: SerializationDatabase? = try SerializationDatabase(directory: url)
            #expect(database?.write(Record(id: "limit", data: CbDeepChain(root: CbLink(length: 511)))) == true)
            #expect(database?.write(Record(id: "handLimit", data: FidelityChain(depth: 512))) == true)
            database?.close()
            database = nil
            let depth = 100_000
            /// A record of `className`: `prefix`, `opening` 100,000 times, `null`, and as many `}`.
            func deep(_ className: String, _ prefix: String, _ opening: String) -> [UInt8] {
                let json = Array(prefix.utf8) + Array(String(repeating: opening, count: depth).utf8) + Array("null".utf8)
                    + Array(repeating: UInt8(ascii: "}"), count: depth + 1)
                var value: [UInt8] = []
                RecordValue.appendHeader(className: className, fullID: nil, to: &value)
                let headerSize = value.count
                value += json
                RecordValue.sealChecksum(in: &value, headerSize: headerSize)
                return value
            }
            rawPut(url, "records", [
                (Array("codable".utf8), deep("CbDeepChain", #"{"object":"CbDeepChain","root":"#, #"{"next":"#)),
                (Array("hand".utf8), deep("FidelityChain", #"{"object":"FidelityChain","next":"#, #"{"object":"FidelityChain","next":"#)),
            ])
            let sync = try SerializationDatabase(directory: url)
            defer { sync.close() }
            for stackSize in [512 << 10, 16 << 20] {
                let failures = await onThread(stackSize: stackSize) {
                    var failures: [String] = []
                    if sync.read(id: "codable") as CbDeepChain? != nil || sync.lastError.map({ if case .corruptRecord = $0 { true } else { false } }) != true {
                        failures.append("codable: \(String(describing: sync.lastError))")
                    }
                    if sync.read(id: "hand") as FidelityChain? != nil || sync.lastError.map({ if case .corruptRecord = $0 { true } else { false } }) != true {
                        failures.append("hand: \(String(describing: sync.lastError))")
                    }
                    // At the limit: read whole with room enough, else a typed error.
                    if let chain = sync.read(id: "limit") as CbDeepChain? {
                        if chain.root.length != 511 { failures.append("limit: \(chain.root.length) links") }
                    } else if sync.lastError?.decodingFailure == nil || stackSize > 512 << 10 {
                        failures.append("limit: \(String(describing: sync.lastError))")
                    }
                    if let chain = sync.read(id: "handLimit") as FidelityChain? {
                        if chain.length != 512 { failures.append("handLimit: \(chain.length) links") }
                    } else if sync.lastError?.decodingFailure == nil || stackSize > 512 << 10 {
                        failures.append("handLimit: \(String(describing: sync.lastError))")
                    }
                    return failures
                }
                #expect(failures.isEmpty, "stack \(stackSize >> 10) KiB: \(failures)")
            }
        }
    }
}

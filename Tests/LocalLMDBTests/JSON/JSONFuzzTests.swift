import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import LocalLMDBTestSupport
import Testing

/// Fuzzes the JSON reader, bounded in time. Set LOCALLMDB_FUZZ_SECONDS for longer runs.
@Suite("JSON fuzzing")
struct JSONFuzzTests {
    static var seconds: Double {
        ProcessInfo.processInfo.environment["LOCALLMDB_FUZZ_SECONDS"].flatMap(Double.init) ?? 1.5
    }

    /// Seeded per test, so a failure can be replayed from the printed seed.
    typealias Generator = SplitMix

    static let alphabet: [String] = ["a", "Z", "0", " ", "é", "日", "🎉", "\"", "\\", "\n", "\t", "\u{1}", "\u{7F}", "/", "\u{2028}"]

    static func randomString(_ random: inout Generator) -> String {
        (0..<Int.random(in: 0...12, using: &random)).map { _ in alphabet.randomElement(using: &random) ?? "a" }.joined()
    }

    /// A random JSON value as Foundation objects, `depth` levels deep at most.
    static func randomValue(_ random: inout Generator, depth: Int) -> Any {
        switch Int.random(in: 0..<(depth > 0 ? 8 : 6), using: &random) {
        case 0: return NSNull()
        case 1: return Bool.random(using: &random)
        case 2: return Int.random(in: Int.min...Int.max, using: &random)
        case 3: return Double.random(in: -1e300...1e300, using: &random)
        case 4: return Double(Int.random(in: -1000...1000, using: &random)) / 8
        case 5: return randomString(&random)
        case 6: return (0..<Int.random(in: 0...4, using: &random)).map { _ in randomValue(&random, depth: depth - 1) }
        default: return randomObject(&random, depth: depth - 1)
        }
    }

    static func randomObject(_ random: inout Generator, depth: Int) -> [String: Any] {
        var object: [String: Any] = [:]
        for _ in 0..<Int.random(in: 0...5, using: &random) {
            object[randomString(&random)] = randomValue(&random, depth: depth)
        }
        return object
    }

    /// Where a parsed value differs from what JSONSerialization read, or nil when it matches.
    static func difference(_ value: JSONValue, _ foundation: Any, path: String = "$") -> String? {
        let same: Bool
        switch value {
        case .null: same = foundation is NSNull
        case let .bool(flag): same = (foundation as? Bool) == flag
        case let .int(number):
            // Foundation reads some large integers as NSDecimalNumber.
            same = (foundation as? NSDecimalNumber).map { $0.stringValue == String(number) }
                ?? (foundation as? Int).map { Int64($0) == number }
                ?? (foundation as? Double).map { $0 == Double(number) } ?? false
        case let .double(number):
            same = (foundation as? Double).map { $0 == number } ?? (foundation as? Int).map { Double($0) == number } ?? false
        case let .number(text):
            // Kept as text: a number a Double would not write back the same.
            let number = Double(text)
            same = (foundation as? NSDecimalNumber).map { $0.doubleValue == number }
                ?? (foundation as? Double).map { $0 == number } ?? (foundation as? Int).map { Double($0) == number } ?? false
        case let .string(text): same = (foundation as? String) == text
        case let .array(elements):
            guard let others = foundation as? [Any], others.count == elements.count else { return "\(path): \(value) vs \(foundation)" }
            for (index, pair) in zip(elements, others).enumerated() {
                if let difference = difference(pair.0, pair.1, path: "\(path)[\(index)]") { return difference }
            }
            return nil
        case let .object(object):
            guard let others = foundation as? [String: Any] else { return "\(path): object vs \(foundation)" }
            for member in object.members {
                guard let other = others[member.key] else { return "\(path): key \(member.key.debugDescription) missing" }
                if let difference = difference(member.value, other, path: "\(path).\(member.key.debugDescription)") { return difference }
            }
            return others.count == object.members.count ? nil : "\(path): \(object.members.count) members vs \(others.count)"
        case .unencodable:
            return "\(path): the reader never produces unencodable values"
        }
        return same ? nil : "\(path): \(value) vs \(foundation) (\(type(of: foundation)))"
    }

    /// Runs `body` with a freshly seeded generator until the time is up; returns how often.
    /// The seed is printed, so a failure can be replayed.
    static func fuzz(_ name: String, _ body: (inout Generator) throws -> Void) rethrows -> Int {
        let seed = UInt64.random(in: 0...UInt64.max)
        var random = Generator(seed: seed)
        print("\(name) seed: \(seed)")
        let deadline = Date().addingTimeInterval(Self.seconds)
        var runs = 0
        while Date() < deadline {
            try body(&random)
            runs += 1
        }
        return runs
    }

    static func parse(_ bytes: [UInt8]) -> Result<JSONValue, DatabaseError> {
        bytes.withUnsafeBytes { buffer in Result { () throws(DatabaseError) in try JSONReader.parse(buffer) } }
    }

    @Test func validDocumentsReadAsJSONSerializationReadsThem() throws {
        let documents = try Self.fuzz("JSON fuzz") { random in
            let object = Self.randomObject(&random, depth: 6)
            let data = try JSONSerialization.data(withJSONObject: object)
            let foundation = try JSONSerialization.jsonObject(with: data)
            switch Self.parse(Array(data)) {
            case let .success(value):
                let difference = Self.difference(value, foundation)
                #expect(difference == nil, "\(difference ?? "")")
            case let .failure(error):
                Issue.record("rejected a valid document (\(error)): \(String(decoding: data, as: UTF8.self))")
            }
            // And what LocalLMDB writes, JSONSerialization reads back the same.
            if case let .success(value) = Self.parse(Array(data)) {
                var writer = JSONWriter()
                writer.write(value)
                let reread = try JSONSerialization.jsonObject(with: Data(writer.bytes))
                let difference = Self.difference(value, reread)
                #expect(difference == nil, "rewritten: \(difference ?? "")")
            }
        }
        #expect(documents > 100)
    }

    @Test func mutatedAndTruncatedDocumentsNeverCrash() throws {
        let inputs = try Self.fuzz("JSON mutation") { random in
            var bytes = Array(try JSONSerialization.data(withJSONObject: Self.randomObject(&random, depth: 4)))
            for _ in 0..<Int.random(in: 1...4, using: &random) where !bytes.isEmpty {
                let position = Int.random(in: 0..<bytes.count, using: &random)
                switch Int.random(in: 0..<5, using: &random) {
                case 0: bytes[position] ^= UInt8(1 << Int.random(in: 0..<8, using: &random))
                case 1: bytes.remove(at: position)
                case 2: bytes.insert(UInt8.random(in: 0...255, using: &random), at: position)
                case 3: bytes = Array(bytes[..<position])
                default: bytes.insert(contentsOf: Array("[{\"\\u".utf8).shuffled(using: &random), at: position)
                }
            }
            // Either outcome is fine; crashing or hanging is not. What is accepted must be valid
            // JSON by JSONSerialization's reading too.
            if case .success = Self.parse(bytes), let text = String(validating: bytes, as: UTF8.self) {
                #expect((try? JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed)) != nil,
                        "accepted \(text)")
            }
            _ = DataObject(rawString: String(decoding: bytes, as: UTF8.self))
        }
        #expect(inputs > 100)
    }

    @Test func hostileInputsAreClearErrors() {
        let cases: [(String, [UInt8])] = [
            ("invalid UTF-8", Array(#"{"a":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8)),
            ("overlong UTF-8", Array(#"{"a":""#.utf8) + [0xC0, 0xAF] + Array(#""}"#.utf8)),
            ("encoded surrogate", Array(#"{"a":""#.utf8) + [0xED, 0xA0, 0x80] + Array(#""}"#.utf8)),
            ("lone high surrogate", Array(#"{"a":"\ud83d"}"#.utf8)),
            ("lone low surrogate", Array(#"{"a":"\ude00x"}"#.utf8)),
            ("truncated", Array(#"{"a":[1,2"#.utf8)),
            ("deep nesting", Array(String(repeating: "[", count: 600).utf8)),
            ("huge exponent", Array(#"{"a":1e999999999999}"#.utf8)),
            ("leading zero", Array(#"{"a":01}"#.utf8)),
            ("bare minus", Array(#"{"a":-}"#.utf8)),
            ("raw tab in string", Array("{\"a\":\"\t\"}".utf8)),
            ("empty", []),
        ]
        for (name, bytes) in cases {
            guard case let .failure(error) = Self.parse(bytes) else {
                Issue.record("\(name) was accepted")
                continue
            }
            guard case .invalidJSON = error else {
                Issue.record("\(name): unexpected error \(error)")
                continue
            }
        }
        // Nesting up to the limit is fine.
        let deepest = String(repeating: "[", count: JSONReader.maxDepth) + String(repeating: "]", count: JSONReader.maxDepth)
        #expect(throws: Never.self) { _ = try Self.parse(Array(deepest.utf8)).get() }
    }

    /// A level of nesting takes little of the validator's stack: a document at the limit, of
    /// objects and arrays in turn, is checked on a 1 MiB stack even by an unoptimized build
    /// (which took over 3 KiB a level, and crashed there); under ThreadSanitizer, whose frames are
    /// several times larger, on 8 MiB.
    @Test func aDocumentAtTheNestingLimitIsCheckedOnASmallStack() async {
        let levels = JSONValidator.maxDepth / 2
        let deepest = Array((String(repeating: #"{"a":["#, count: levels) + "1" + String(repeating: "]}", count: levels)).utf8)
        let checked = await onThread(stackSize: runningUnderThreadSanitizer ? 8 << 20 : 1 << 20) {
            deepest.withUnsafeBytes { (try? JSONValidator.validate($0)) != nil }
        }
        #expect(checked)
    }

    /// What each typed getter should give for `value`, by the conversion rules, from the tree.
    static func expectedReads(_ value: JSONValue?) -> (string: String?, int: Int?, double: Double?, bool: Bool?, strings: [String], optionalInts: [Int?]) {
        func int(_ value: JSONValue) -> Int? {
            switch value {
            case let .int(number): return Int(exactly: number)
            case let .double(number): return Int(exactly: number)
            default: return nil
            }
        }
        func double(_ value: JSONValue) -> Double? {
            switch value {
            case let .double(number): return number
            // The nearest double (as `Double(String)` and `JSONDecoder` read it).
            case let .int(number): return Double(number)
            default: return nil
            }
        }
        var result: (string: String?, int: Int?, double: Double?, bool: Bool?, strings: [String], optionalInts: [Int?]) = (nil, nil, nil, nil, [], [])
        guard let value else { return result }
        if case let .string(text) = value { result.string = text }
        if case let .bool(flag) = value { result.bool = flag }
        result.int = int(value)
        result.double = double(value)
        if case let .array(elements) = value {
            result.strings = elements.compactMap { if case let .string(text) = $0 { text } else { nil } }
            result.optionalInts = elements.map(int)
        }
        return result
    }

    @Test func fieldsReadInPlaceMatchTheParsedTree() throws {
        let documents = try Self.fuzz("in-place reads") { random in
            var object = Self.randomObject(&random, depth: 3)
            // Member names that need escapes, and fields of every type at the top level.
            object["quote\"key"] = Self.randomValue(&random, depth: 1)
            object["é/\n"] = [Int.random(in: -5...5, using: &random), NSNull(), 2.0, "x"]
            let data = try JSONSerialization.data(withJSONObject: object)
            let text = String(decoding: data, as: UTF8.self)
            guard case let .success(.object(tree)) = Self.parse(Array(data)) else {
                Issue.record("rejected \(text)")
                return
            }
            let dataObject = DataObject(rawString: text)
            // Shuffled order, each key twice, and a missing one: lookups wrap round the members.
            let keys = (tree.members.map(\.key) + tree.members.map(\.key) + ["no such key"]).shuffled(using: &random)
            for key in keys {
                let expected = Self.expectedReads(tree[key])
                #expect(dataObject.get(key) as String? == expected.string, "\(key.debugDescription) in \(text)")
                #expect(dataObject.get(key) as Int? == expected.int, "\(key.debugDescription) in \(text)")
                let double: Double? = dataObject.get(key)
                #expect(double == expected.double || (double?.isNaN == true && expected.double?.isNaN == true), "\(key.debugDescription) in \(text)")
                #expect(dataObject.get(key) as Bool? == expected.bool, "\(key.debugDescription) in \(text)")
                #expect(dataObject.get(key) as [String] == expected.strings, "\(key.debugDescription) in \(text)")
                #expect(dataObject.get(key) as [Int?] == expected.optionalInts, "\(key.debugDescription) in \(text)")
            }
            // Re-encoding what was read in place gives the same tree back.
            let rewritten = try #require(dataObject.toRawString())
            #expect(Self.parse(Array(rewritten.utf8)) == .success(.object(tree)), "\(text)")
        }
        #expect(documents > 100)
    }
}

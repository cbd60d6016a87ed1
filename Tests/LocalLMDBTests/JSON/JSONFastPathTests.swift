@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import Testing

/// The one-pass readers must give exactly what a general reading gives: a number or an array
/// count that differed would change data silently.
@Suite("JSON fast paths")
struct JSONFastPathTests {
    /// What the number text is, by Swift's own parsers: an `Int64` when it is one, else the
    /// nearest `Double` (the value the general path, and the format, give it); `-0` as written
    /// (an integer would lose its sign).
    static func general(_ text: String) -> JSONValue? {
        if text == "-0" { return .number(text) }
        if let integer = Int64(text) { return .int(integer) }
        return Double(text).map { .double($0) }
    }

    static func scanned(_ text: String) -> (value: JSONValue, end: Int)? {
        // A delimiter after the number, as in a document.
        var document = text + ","
        return document.withUTF8 { JSONScanner(UnsafeRawBufferPointer($0)).number(at: 0) }
    }

    static func check(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let expected = general(text)
        let scanned = scanned(text)
        #expect(scanned?.value == expected, "\(text)", sourceLocation: sourceLocation)
        if scanned != nil { #expect(scanned?.end == text.utf8.count, "\(text)", sourceLocation: sourceLocation) }
        // A double's sign and bits too: -0.0 and 0.0 are == but not the same value.
        if case let .double(a)? = scanned?.value, case let .double(b)? = expected {
            #expect(a.bitPattern == b.bitPattern, "\(text)", sourceLocation: sourceLocation)
        }
    }

    @Test func edgeNumbersReadAsTheGeneralPathReadsThem() {
        for text in Self.edgeNumbers { Self.check(text) }
    }

    /// `Int` and `Double` read a number straight into their type: the conversion of
    /// `number(at:)`'s value — exact for `Int`, the nearest `Double` (as `Double(String)` reads
    /// the text; the sign of a zero included) — ending where it ends.
    @Test func typedNumberReadsMatchTheGeneralNumber() {
        var generator = SystemRandomNumberGenerator()
        let random = (0..<2_000).map { _ in
            let digits = (0..<Int.random(in: 1...17, using: &generator)).map { _ in String(Int.random(in: 0...9, using: &generator)) }
            let text = String(Int.random(in: 1...9, using: &generator)) + digits.joined()
            let point = Int.random(in: 0...text.count, using: &generator)
            let number = point == text.count ? text : String(text.prefix(point == 0 ? 1 : point)) + "." + text.dropFirst(point == 0 ? 1 : point)
            return Bool.random(using: &generator) ? "-" + number : number
        }
        for text in Self.edgeNumbers + ["-0.0", "-0", "0.000", "-0.000", "12.0", "-12.00", "1.5", "true", "\"1\"", "null"] + random {
            var document = text + ","
            document.withUTF8 { utf8 in
                let scanner = JSONScanner(UnsafeRawBufferPointer(utf8))
                let general = scanner.number(at: 0)
                let int = Int.read(scanner, at: 0)
                let double = Double.read(scanner, at: 0)
                switch general?.value {
                case let .int(number)?:
                    #expect(int?.value == Int(exactly: number), "\(text)")
                    #expect(int?.end == (Int(exactly: number) == nil ? nil : general?.end), "\(text)")
                    #expect(double?.value.bitPattern == Double(number).bitPattern, "\(text)")
                    #expect(double?.value.bitPattern == Double(text)?.bitPattern, "\(text)")
                    #expect(double?.end == general?.end, "\(text)")
                case let .double(number)?:
                    #expect(int?.value == Int(exactly: number), "\(text)")
                    #expect(int?.end == (Int(exactly: number) == nil ? nil : general?.end), "\(text)")
                    #expect(double?.value.bitPattern == number.bitPattern && double?.end == general?.end, "\(text)")
                case let .number(written)?:
                    // `-0`, kept as written: 0 as an `Int`, -0.0 as a `Double`.
                    #expect(int?.value == Int(written) && int?.end == general?.end, "\(text)")
                    #expect(double?.value.bitPattern == Double(written)?.bitPattern && double?.end == general?.end, "\(text)")
                default:
                    #expect(int == nil, "\(text)")
                    if text != "\"1\"" { #expect(double == nil, "\(text)") }
                }
            }
        }
    }

    static let edgeNumbers = [
            "0", "-0", "7", "-7", "0.0", "-0.0", "0.5", "-0.5", "1.0", "10", "100000000000000", "999999999999999",
            "1000000000000000", "9999999999999999", "123456789012345678", "9223372036854775807", "-9223372036854775808",
            "9223372036854775808", "18446744073709551615", "0.1", "0.2", "0.3", "2.57", "123456789.012345",
            "1234567890.123456", "0.000000000000000000001", "0.0000000000000000000001", "0.00000000000000000000001",
            "1e5", "1E5", "1.5e-3", "-2.5E+10", "3.141592653589793", "2.2250738585072014e-308", "1.7976931348623157e308",
            "123.456000", "100.0", "0.00001",
        ]

    @Test func randomNumbersReadAsTheGeneralPathReadsThem() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let integerDigits = Int.random(in: 1...19, using: &generator)
            var text = Bool.random(using: &generator) ? "-" : ""
            text += String(Int.random(in: 1...9, using: &generator))
            for _ in 1..<integerDigits { text += String(Int.random(in: 0...9, using: &generator)) }
            if Bool.random(using: &generator) {
                let fractionDigits = Int.random(in: 1...24, using: &generator)
                text += "." + (0..<fractionDigits).map { _ in String(Int.random(in: 0...9, using: &generator)) }.joined()
            }
            if Int.random(in: 0..<8, using: &generator) == 0 { text = (text.hasPrefix("-") ? "-0." : "0.") + text.filter(\.isNumber) }
            Self.check(text)
        }
    }

    /// The element count from one pass over an array's bytes against a walk element by element.
    @Test func arrayCountsMatchAWalkOfTheElements() {
        let arrays = [
            "[]", "[ ]", "[1]", "[1,2,3]", "[ 1 , 2 , 3 ]", #"["a","b"]"#, #"["a,b","c]d","e[f"]"#, #"["\"quoted,\"", "\\", "x"]"#,
            #"[[1,2],[3,[4,5]],{"a":[6,7],"b":"]"}]"#, "[true,false,null]", "[-1.5e3,0.0,12]", #"[{"k":"v,w"},{}]"#,
            #"["é,ü","日本,語"]"#, "[[],[[]],[[[]]]]", "[\n1,\n2\n]",
        ]
        for text in arrays {
            var document = text
            let (fast, walked) = document.withUTF8 { utf8 -> (Int, Int) in
                let scanner = JSONScanner(UnsafeRawBufferPointer(utf8))
                var walked = 0
                var next = scanner.firstElement(ofArrayAt: 0)
                while let element = next {
                    walked += 1
                    next = scanner.nextElement(after: scanner.end(ofValueAt: element))
                }
                return (scanner.elementCount(ofArrayAt: 0), walked)
            }
            #expect(fast == walked, "\(text)")
        }
    }
}

/// Looking a field up by comparing its key's bytes with the stored member's: a key holding a
/// quote or a backslash must not match the bytes after a shorter key, nor an escaped spelling.
@Suite("Field lookups by bytes")
struct FieldLookupTests {
    @Test func keysWithQuotesOrBackslashesFindOnlyThemselves() {
        let object = DataObject(rawString: #"{"object":"X","a":"b","c\"":"quoted","d\\n":"slash","e\n":"newline","f":1}"#)
        #expect((object.get(#"a":"#) as String?) == nil)  // Would match `a` followed by `":"` and read `b`.
        #expect((object.get(#"a""#) as String?) == nil)
        #expect(object.get("a") == "b")
        #expect(object.get("c\"") == "quoted")
        #expect(object.get("d\\n") == "slash")  // The key is d, backslash, n ...
        #expect(object.get("e\n") == "newline")  // ... and this one e and a newline, spelt \n.
        #expect((object.get("e\\n") as String?) == nil)
        #expect(object.get("f") == 1)
    }

    @Test func theQuoteAndBackslashTestIsExact() {
        for count in 0..<24 {
            for position in 0..<max(count, 1) {
                for special in [UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "a"), 0x5B, 0x7C, 0xDC, 0xA2] {
                    var bytes = [UInt8](repeating: UInt8(ascii: "x"), count: count)
                    if count > 0 { bytes[position] = special }
                    let expected = bytes.contains(0x22) || bytes.contains(0x5C)
                    #expect(bytes.withUnsafeBytes { JSONGrammar.containsQuoteOrBackslash($0) } == expected, "\(bytes)")
                }
            }
        }
    }
}

import CLibFuzzer
import Foundation

// libFuzzer's entry points. One binary holds every target; `LOCALLMDB_FUZZ_TARGET` names the one
// a run exercises (scripts/fuzz sets it). A target checks what it computes against a reference
// and stops the process through `mismatch` on a wrong answer, which libFuzzer reports as a crash
// with the input that caused it.

/// The targets, by name.
let targets: [String: @Sendable (UnsafeRawBufferPointer) -> Void] = [
    "json": JSONTargets.document,
    "number": JSONTargets.number,
    "date": JSONTargets.date,
    "indexorder": OrderTargets.indexOrder,
    "record": StoreTargets.record,
    "changelog": StoreTargets.changeLog,
    "rows": StoreTargets.rows,
    "jsonlines": StoreTargets.jsonLines,
    "modelfactory": ModelTargets.modelFactory,
    "codable": ModelTargets.codable,
    "roundtrip": ModelTargets.roundTrip,
    "tokens": DatabaseTargets.tokens,
    "query": DatabaseTargets.query,
]

nonisolated(unsafe) var selected: ((UnsafeRawBufferPointer) -> Void)?

@_cdecl("LLVMFuzzerInitialize")
public func fuzzerInitialize(_ argc: UnsafeMutablePointer<Int32>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?) -> Int32 {
    let name = ProcessInfo.processInfo.environment["LOCALLMDB_FUZZ_TARGET"] ?? ""
    guard let target = targets[name] else {
        FileHandle.standardError.write(Data("LOCALLMDB_FUZZ_TARGET must name a target: \(targets.keys.sorted().joined(separator: ", "))\n".utf8))
        exit(2)
    }
    selected = target
    return 0
}

/// The program's entry (SwiftPM names an executable's entry point after its module): libFuzzer's
/// driver, with this target's callback.
@_cdecl("LocalLMDBFuzz_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { data, size in fuzzerTestOneInput(data, size) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    selected?(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

/// Stops the run: a wrong answer for this input.
func mismatch(_ what: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) -> Never {
    FileHandle.standardError.write(Data("MISMATCH (\(file):\(line)): \(what())\n".utf8))
    abort()
}

/// Reads the fuzzer's bytes as a stream of choices.
struct Choices {
    let bytes: UnsafeRawBufferPointer
    var offset = 0

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    var isEmpty: Bool { offset >= bytes.count }

    mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func int(below bound: Int) -> Int {
        bound <= 1 ? 0 : Int(byte()) % bound
    }

    mutating func uint64() -> UInt64 {
        (0..<8).reduce(UInt64(0)) { value, _ in value << 8 | UInt64(byte()) }
    }

    /// Up to `limit` bytes, the count chosen first.
    mutating func data(limit: Int) -> [UInt8] {
        let count = min(int(below: limit + 1), bytes.count - min(offset, bytes.count))
        defer { offset += count }
        return Array(bytes[offset..<(offset + count)])
    }

    /// A short string from an alphabet of awkward characters, or raw UTF-8.
    mutating func string() -> String {
        let alphabet: [String] = ["", "a", "b", "\u{0}", "\u{1}", "é", "e\u{301}", "\u{FFFF}", "😀", "\"", "\\", "/", "\n", "\u{7F}", "z", "\u{10FFFF}", "A"]
        var text = ""
        for _ in 0..<int(below: 6) { text += alphabet[int(below: alphabet.count)] }
        return text
    }
}

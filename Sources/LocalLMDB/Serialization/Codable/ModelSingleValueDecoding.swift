import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

struct ModelSingleValueDecoding: SingleValueDecodingContainer {
    let decoder: ModelDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }

    private func read<V>(_ read: (JSONScanner, Int) -> (value: V, end: Int)?) throws -> V {
        try decoder.checkLive()
        return try decoder.scalar(V.self, at: 0, codingPath, read).value
    }

    func decodeNil() -> Bool { decoder.isLive && decoder.scanner.byte(at: 0) == UInt8(ascii: "n") }
    func decode(_ type: Bool.Type) throws -> Bool { try read(Bool.read) }
    func decode(_ type: String.Type) throws -> String { try read(String.read) }
    func decode(_ type: Double.Type) throws -> Double {
        decoder.foreign ? try read(Double.readNumber) : try read(Double.read)
    }
    func decode(_ type: Float.Type) throws -> Float {
        decoder.foreign ? try read(ValueReading.floatNumber) : try read(ValueReading.float)
    }
    func decode(_ type: Int.Type) throws -> Int { try read(Int.read) }
    func decode(_ type: Int8.Type) throws -> Int8 { try read { ValueReading.integer(Int8.self, $0, at: $1) } }
    func decode(_ type: Int16.Type) throws -> Int16 { try read { ValueReading.integer(Int16.self, $0, at: $1) } }
    func decode(_ type: Int32.Type) throws -> Int32 { try read { ValueReading.integer(Int32.self, $0, at: $1) } }
    func decode(_ type: Int64.Type) throws -> Int64 { try read { ValueReading.integer(Int64.self, $0, at: $1) } }
    func decode(_ type: UInt.Type) throws -> UInt { try read { ValueReading.integer(UInt.self, $0, at: $1) } }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try read { ValueReading.integer(UInt8.self, $0, at: $1) } }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try read { ValueReading.integer(UInt16.self, $0, at: $1) } }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try read { ValueReading.integer(UInt32.self, $0, at: $1) } }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try read { ValueReading.integer(UInt64.self, $0, at: $1) } }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.decode(type, at: 0, key: nil) }
}

import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

struct ModelUnkeyedDecoding: UnkeyedDecodingContainer {
    let decoder: ModelDecoder
    /// The next element's offset; nil past the last.
    private var next: Int?
    let count: Int?
    private(set) var currentIndex = 0

    init(decoder: ModelDecoder) {
        self.decoder = decoder
        next = decoder.scanner.firstElement(ofArrayAt: 0)
        count = decoder.scanner.elementCount(ofArrayAt: 0)
    }

    var codingPath: [any CodingKey] { decoder.codingPath }
    var isAtEnd: Bool { next == nil }

    private var indexKey: ModelKey { ModelKey(intValue: currentIndex) }

    private func element(_ type: Any.Type) throws -> Int {
        try decoder.checkLive()
        guard let next else {
            throw DecodingError.valueNotFound(type, .init(codingPath: codingPath + [indexKey], debugDescription: "the array has no more elements"))
        }
        return next
    }

    private mutating func advance(pastValueEndingAt end: Int) {
        next = decoder.scanner.nextElement(after: end)
        currentIndex += 1
    }

    private mutating func read<V>(_ read: (JSONScanner, Int) -> (value: V, end: Int)?) throws -> V {
        let offset = try element(V.self)
        let (value, end) = try decoder.scalar(V.self, at: offset, codingPath + [indexKey], read)
        advance(pastValueEndingAt: end)
        return value
    }

    mutating func decodeNil() throws -> Bool {
        let offset = try element(Any?.self)
        guard decoder.scanner.byte(at: offset) == UInt8(ascii: "n") else { return false }
        advance(pastValueEndingAt: offset + 4)
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try read(Bool.read) }
    mutating func decode(_ type: String.Type) throws -> String { try read(String.read) }
    mutating func decode(_ type: Double.Type) throws -> Double {
        decoder.foreign ? try read(Double.readNumber) : try read(Double.read)
    }
    mutating func decode(_ type: Float.Type) throws -> Float {
        decoder.foreign ? try read(ValueReading.floatNumber) : try read(ValueReading.float)
    }
    mutating func decode(_ type: Int.Type) throws -> Int { try read(Int.read) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try read { ValueReading.integer(Int8.self, $0, at: $1) } }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try read { ValueReading.integer(Int16.self, $0, at: $1) } }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try read { ValueReading.integer(Int32.self, $0, at: $1) } }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try read { ValueReading.integer(Int64.self, $0, at: $1) } }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try read { ValueReading.integer(UInt.self, $0, at: $1) } }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try read { ValueReading.integer(UInt8.self, $0, at: $1) } }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try read { ValueReading.integer(UInt16.self, $0, at: $1) } }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try read { ValueReading.integer(UInt32.self, $0, at: $1) } }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try read { ValueReading.integer(UInt64.self, $0, at: $1) } }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let offset = try element(T.self)
        let value = try decoder.decode(type, at: offset, key: indexKey)
        advance(pastValueEndingAt: decoder.scanner.end(ofValueAt: offset))
        return value
    }

    private mutating func nestedDecoder(_ type: Any.Type) throws -> ModelDecoder {
        let offset = try element(type)
        try decoder.checkStack(indexKey)
        let nested = decoder.nested(at: offset, key: indexKey)
        advance(pastValueEndingAt: decoder.scanner.end(ofValueAt: offset))
        return nested
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try nestedDecoder([String: Any].self).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try nestedDecoder([Any].self).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        try nestedDecoder(Any.self)
    }
}

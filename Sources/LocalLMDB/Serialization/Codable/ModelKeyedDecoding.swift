import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// The members of the object a decoder reads, looked up from where the last lookup left off
/// (`ModelDecoder.member`). Holds the decoder alone: the container is copied and destroyed
/// through value witnesses by every call from `KeyedDecodingContainer`'s box, which costs a
/// reference count per stored reference.
struct ModelKeyedDecoding<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: ModelDecoder

    init(decoder: ModelDecoder) {
        self.decoder = decoder
    }

    var object: EncodedObject { decoder.value }

    var codingPath: [any CodingKey] { decoder.codingPath }

    /// Every member but the class name, by field key (`FieldKey` undone).
    var allKeys: [Key] {
        guard decoder.isLive else { return [] }
        decoder.probe?.noteEveryMember()
        let scanner = object.scanner
        var keys: [Key] = []
        var next = scanner.firstMember(ofObjectAt: 0)
        while let offset = next {
            let member = scanner.member(at: offset)
            let name = scanner.name(of: member)
            if decoder.foreign {
                if let key = Key(stringValue: name) { keys.append(key) }
            } else if name != DataObject.classNameKey, let key = Key(stringValue: FieldKey.field(fromStored: name)) {
                keys.append(key)
            }
            next = scanner.nextMember(after: scanner.end(ofValueAt: member.value))
        }
        return keys
    }

    func contains(_ key: Key) -> Bool {
        guard decoder.isLive else { return false }
        return find(key) != nil
    }

    /// The member `key` names, if any (the caller has checked the decoder is live).
    @inline(__always)
    private func find(_ key: Key) -> JSONScanner.Member? {
        decoder.member(key.stringValue)
    }

    private func member(_ key: Key) throws -> Int {
        try decoder.checkLive()
        guard let member = find(key) else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no field '\(key.stringValue)'"))
        }
        return member.value
    }

    @inline(__always)
    private func read<V>(_ key: Key, _ read: (JSONScanner, Int) -> (value: V, end: Int)?) throws -> V {
        let offset = try member(key)
        let (value, end) = try decoder.scalar(V.self, at: offset, codingPath + [key], read)
        decoder.didRead(upTo: end)
        return value
    }

    /// nil when the field is missing or `null`.
    @inline(__always)
    private func readIfPresent<V>(_ key: Key, _ read: (JSONScanner, Int) -> (value: V, end: Int)?) throws -> V? {
        guard let offset = try presentValue(key) else { return nil }
        let (value, end) = try decoder.scalar(V.self, at: offset, codingPath + [key], read)
        decoder.didRead(upTo: end)
        return value
    }

    /// Where the value of `key` starts; nil when the member is missing or `null`.
    private func presentValue(_ key: Key) throws -> Int? {
        try decoder.checkLive()
        guard let member = find(key), object.scanner.byte(at: member.value) != UInt8(ascii: "n") else { return nil }
        return member.value
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        object.scanner.byte(at: try member(key)) == UInt8(ascii: "n")
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try read(key, Bool.read) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try read(key, String.read) }
    // Each reader passed as it is, to be inlined (see `ModelDecoder.doubles`).
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        decoder.foreign ? try read(key, Double.readNumber) : try read(key, Double.read)
    }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
        decoder.foreign ? try read(key, ValueReading.floatNumber) : try read(key, ValueReading.float)
    }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try read(key, Int.read) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try read(key) { ValueReading.integer(Int8.self, $0, at: $1) } }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try read(key) { ValueReading.integer(Int16.self, $0, at: $1) } }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try read(key) { ValueReading.integer(Int32.self, $0, at: $1) } }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try read(key) { ValueReading.integer(Int64.self, $0, at: $1) } }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try read(key) { ValueReading.integer(UInt.self, $0, at: $1) } }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try read(key) { ValueReading.integer(UInt8.self, $0, at: $1) } }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try read(key) { ValueReading.integer(UInt16.self, $0, at: $1) } }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try read(key) { ValueReading.integer(UInt32.self, $0, at: $1) } }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try read(key) { ValueReading.integer(UInt64.self, $0, at: $1) } }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        var end: Int?
        let value = try decoder.decode(type, at: try member(key), key: key, end: &end)
        if let end { decoder.didRead(upTo: end) }
        return value
    }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try readIfPresent(key, Bool.read) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try readIfPresent(key, String.read) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
        decoder.foreign ? try readIfPresent(key, Double.readNumber) : try readIfPresent(key, Double.read)
    }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try readIfPresent(key, Int.read) }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let offset = try presentValue(key) else { return nil }
        if T.self is any ReferenceDecoding.Type { return try optionalReference(type, at: offset, key: key) }
        var end: Int?
        let value = try decoder.decode(type, at: offset, key: key, end: &end)
        if let end { decoder.didRead(upTo: end) }
        return value
    }

    /// An optional property's `Reference`: nil when the record it names is missing.
    private func optionalReference<T: Decodable>(_ type: T.Type, at offset: Int, key: Key) throws -> T? {
        let scratch = ReadScratch.current
        scratch.decodingOptionalReference = true
        defer { scratch.decodingOptionalReference = false }
        do {
            return try decoder.decode(type, at: offset, key: key)
        } catch is MissingOptionalReference {
            return nil
        }
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try nestedDecoder(key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try nestedDecoder(key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        try superDecoder(key: ModelKey.super)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        try superDecoder(key: key)
    }

    private func nestedDecoder(_ key: Key) throws -> ModelDecoder {
        let offset = try member(key)
        try decoder.checkStack(key)
        return decoder.nested(at: offset, key: key)
    }

    /// A decoder for the member `key`; for `null` when it is missing (as `JSONDecoder` does).
    private func superDecoder(key: any CodingKey) throws -> any Decoder {
        try decoder.checkLive()
        guard let found = decoder.member(key.stringValue) else {
            return ModelDecoder(value: EncodedObject.null, codingPath: codingPath + [key], dates: decoder.dates, foreign: decoder.foreign)
        }
        try decoder.checkStack(key)
        return decoder.nested(at: found.value, key: key)
    }
}

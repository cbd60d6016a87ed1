import Foundation
@testable import LocalLMDB
@testable import LocalLMDBJSON

/// A model with every kind of value a `Codable` model stores.
struct EveryValue: Codable, Persistable {
    enum Kind: String, Codable { case plain, odd = "odd \u{0} kind", empty = "" }
    struct Nested: Codable { var name: String; var values: [Double] }
    var string: String?
    var int: Int?
    var int8: Int8?
    var uint64: UInt64?
    var double: Double?
    var float: Float?
    var bool: Bool?
    var date: Date?
    var uuid: UUID?
    var url: URL?
    var decimal: Decimal?
    var data: Data?
    var strings: [String]?
    var table: [String: Int]?
    var nested: Nested?
    var kind: Kind?
    var optionals: [Int?]?

    /// Equal, doubles and dates bit for bit, strings by their scalars.
    func isIdentical(to other: EveryValue) -> Bool {
        func bits(_ value: Double?) -> UInt64? { value?.bitPattern }
        func scalars(_ value: String?) -> [Unicode.Scalar]? { value.map { Array($0.unicodeScalars) } }
        return scalars(string) == scalars(other.string) && int == other.int && int8 == other.int8 && uint64 == other.uint64
            && bits(double) == bits(other.double) && float?.bitPattern == other.float?.bitPattern && bool == other.bool
            && bits(date?.timeIntervalSinceReferenceDate) == bits(other.date?.timeIntervalSinceReferenceDate) && uuid == other.uuid
            && url?.absoluteString == other.url?.absoluteString && decimal == other.decimal && data == other.data
            && strings.map { $0.map { Array($0.unicodeScalars) } } == other.strings.map { $0.map { Array($0.unicodeScalars) } }
            && table == other.table && scalars(nested?.name) == scalars(other.nested?.name)
            && nested?.values.map(\.bitPattern) == other.nested?.values.map(\.bitPattern) && kind == other.kind && optionals == other.optionals
    }

    static func random(_ choices: inout Choices) -> EveryValue {
        var model = EveryValue()
        func maybe<T>(_ make: () -> T) -> T? { choices.byte() & 1 == 1 ? make() : nil }
        model.string = maybe { choices.string() }
        model.int = maybe { Int(truncatingIfNeeded: choices.uint64()) }
        model.int8 = maybe { Int8(truncatingIfNeeded: choices.byte()) }
        model.uint64 = maybe { choices.uint64() }
        model.double = maybe { Double(bitPattern: choices.uint64()) }
        model.float = maybe { Float(bitPattern: UInt32(truncatingIfNeeded: choices.uint64())) }
        model.bool = maybe { choices.byte() & 1 == 1 }
        model.date = maybe { Date(timeIntervalSinceReferenceDate: Double(Int64(bitPattern: choices.uint64()) % (1 << 50)) / Double(1 << choices.int(below: 30))) }
        model.uuid = maybe { UUID(uuid: (choices.byte(), choices.byte(), choices.byte(), choices.byte(), choices.byte(), choices.byte(), choices.byte(), choices.byte(),
                                          choices.byte(), choices.byte(), choices.byte(), choices.byte(), choices.byte(), choices.byte(), choices.byte(), choices.byte())) }
        model.url = maybe { URL(string: "https://example.com/" + String(choices.uint64(), radix: 36)) }.flatMap { $0 }
        model.decimal = maybe { Decimal(sign: choices.byte() & 1 == 1 ? .minus : .plus, exponent: choices.int(below: 40) - 20, significand: Decimal(choices.uint64())) }
        model.data = maybe { Data(choices.data(limit: 12)) }
        model.strings = maybe { (0..<choices.int(below: 4)).map { _ in choices.string() } }
        model.table = maybe { Dictionary((0..<choices.int(below: 4)).map { _ in (choices.string(), Int(choices.byte())) }) { first, _ in first } }
        model.nested = maybe { Nested(name: choices.string(), values: (0..<choices.int(below: 3)).map { _ in Double(bitPattern: choices.uint64()) }) }
        model.kind = maybe { [Kind.plain, .empty][choices.int(below: 2)] }
        model.optionals = maybe { (0..<choices.int(below: 4)).map { _ in choices.byte() & 1 == 1 ? Int(choices.byte()) : nil } }
        return model
    }
}

enum ModelTargets {
    /// `ModelFactory` on JSON from elsewhere, with each date format: no input crashes, and a
    /// model it makes, written with `JSONEncoder` as ISO 8601, reads back the same.
    static func modelFactory(_ input: UnsafeRawBufferPointer) {
        let data = Data(input)
        for format in [DateFormat.iso8601, .secondsSince1970, .millisecondsSince1970, .pattern("yyyy-MM-dd")] {
            _ = try? ModelFactory.model(EveryValue.self, fromJSON: data, dates: format)
        }
        _ = try? ModelFactory.models(EveryValue.self, fromJSONArray: data)
        _ = try? ModelFactory.models(EveryValue.self, fromJSONArray: data, options: ImportOptions(invalidElements: .fail))
        guard let model = try? ModelFactory.model(EveryValue.self, fromJSON: data, dates: .millisecondsSince1970) else { return }
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .millisecondsSince1970
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        guard let written = try? encoder.encode(model) else { return }
        guard let again = try? ModelFactory.model(EveryValue.self, fromJSON: written, dates: .millisecondsSince1970) else {
            mismatch("a model ModelFactory made does not read back from \(String(decoding: written, as: UTF8.self))")
        }
        // Dates pass through milliseconds as doubles: compared to the microsecond.
        var (left, right) = (model, again)
        if let a = left.date, let b = right.date, abs(a.timeIntervalSince(b)) < 1e-6 { (left.date, right.date) = (nil, nil) }
        if left.float?.isNaN == true || left.double?.isNaN == true { return }
        if !left.isIdentical(to: right) { mismatch("ModelFactory's model \(model) reads back as \(again)") }
    }

    /// Documents from elsewhere read as data objects and as a `Codable` model: every field read
    /// by every type, nothing crashes, and what reads is what the document holds.
    static func codable(_ input: UnsafeRawBufferPointer) {
        let text = String(decoding: input, as: UTF8.self)
        guard let object = try? DataObject(validating: text) else { return }
        let keys = ["string", "int", "double", "bool", "date", "strings", "nested", "object", "", "a"]
        for key in keys {
            let _: String = object.get(key)
            let _: Int? = object.get(key)
            let _: Double = object.get(key)
            let _: Bool? = object.get(key)
            let _: Date? = object.get(key)
            let _: [String] = object.get(key)
            let _: [Int?] = object.get(key)
            let _: [Double] = object.get(key)
            let _: [Date?] = object.get(key)
        }
        _ = try? ModelDecoder.decode(EveryValue.self, from: object)
        _ = object.toRawString()
    }

    /// Models of every value kind, written by the model encoder and read by the model decoder:
    /// the same values, bit for bit.
    static func roundTrip(_ input: UnsafeRawBufferPointer) {
        var choices = Choices(input)
        let model = EveryValue.random(&choices)
        let object: DataObject
        do {
            object = try ModelEncoder.dataObject(encoding: model)
        } catch {
            return  // refused at write (a typed error): nothing stored
        }
        guard let text = object.toRawString() else { mismatch("an encoded model has no text") }
        guard let stored = try? DataObject(validating: text) else { mismatch("an encoded model is not a valid document: \(text)") }
        let decoded: EveryValue
        do {
            decoded = try ModelDecoder.decode(EveryValue.self, from: stored)
        } catch {
            mismatch("\(model) encoded as \(text) does not decode: \(error)")
        }
        if !decoded.isIdentical(to: model) { mismatch("\(model) encoded as \(text) decodes as \(decoded)") }
    }
}

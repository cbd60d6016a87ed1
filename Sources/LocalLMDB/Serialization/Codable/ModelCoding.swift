import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// What the `Codable` encoder and decoder share: coding keys they make, how coding paths are
/// written in errors, and how their errors become `LocalDatabaseError`s.
enum ModelCoding {
    /// `address.visits[2]`: keys joined by dots, indices in brackets.
    static func path(_ codingPath: [any CodingKey]) -> String {
        var text = ""
        for key in codingPath {
            if let index = key.intValue, key.stringValue == String(index) || key is ModelKey {
                text += "[\(index)]"
            } else {
                text += (text.isEmpty ? "" : ".") + key.stringValue
            }
        }
        return text
    }

    /// A write's error thrown by a model's `_storedFields()`, for the record `id`.
    static func encodingError(_ error: any Error, id: String) -> DatabaseError {
        if let error = error as? DatabaseError { return error }
        // The model's own code may have called the public API (`DataObject(validating:)`).
        if let error = error as? LocalDatabaseError { return DatabaseError(error) }
        if case let EncodingError.invalidValue(_, context) = error {
            return .unencodableValue(id: id, path: path(context.codingPath), reason: context.debugDescription)
        }
        return .unencodableValue(id: id, path: "", reason: "encode(to:) threw \(error)")
    }

    /// A read's error thrown by a model's `_restore(from:)`, for the record `id` of class `className`.
    static func decodingError(_ error: any Error, id: String, className: String) -> DatabaseError {
        if let error = error as? DatabaseError { return error }
        // The model's own code may have called the public API (`DataObject(validating:)`).
        if let error = error as? LocalDatabaseError { return DatabaseError(error) }
        guard let error = error as? DecodingError else {
            return .decodingFailed(id: id, className: className, path: "", reason: "init(from:) threw \(error)")
        }
        switch error {
        case let .keyNotFound(key, context):
            return .decodingFailed(
                id: id, className: className, path: path(context.codingPath + [key]),
                reason: "the field is missing (\(context.debugDescription))")
        case let .valueNotFound(_, context), let .typeMismatch(_, context), let .dataCorrupted(context):
            return .decodingFailed(id: id, className: className, path: path(context.codingPath), reason: context.debugDescription)
        @unknown default:
            return .decodingFailed(id: id, className: className, path: "", reason: "\(error)")
        }
    }

    /// `value` as `T` when that is its type (nil otherwise): the special value kinds without a
    /// dynamic cast.
    @inline(__always)
    static func identical<A, T>(_ value: A, as type: T.Type) -> T? {
        A.self == T.self ? unsafeBitCast(value, to: T.self) : nil
    }

    /// `value` as `T`, for a caller that has found `A` to be `T`; throws otherwise. Unlike
    /// `identical`, makes no `T?`: in code not specialized for `T`, that costs a look-up of the
    /// generic type `Optional<T>` per call.
    @inline(__always)
    static func same<A, T>(_ value: A, as type: T.Type) throws -> T {
        guard A.self == T.self else {
            throw DecodingError.typeMismatch(T.self, .init(codingPath: [], debugDescription: "expected \(T.self), read \(A.self)"))
        }
        return unsafeBitCast(value, to: T.self)
    }

    /// `error` with `path` before its coding path, for an encoding or decoding that started a
    /// path of its own below `path`; any other error as it is.
    static func prefixing(_ error: any Error, with path: [any CodingKey]) -> any Error {
        if !path.isEmpty, case let EncodingError.invalidValue(value, found) = error {
            return EncodingError.invalidValue(value, .init(
                codingPath: path + found.codingPath, debugDescription: found.debugDescription, underlyingError: found.underlyingError))
        }
        guard !path.isEmpty, let error = error as? DecodingError else { return error }
        func context(_ context: DecodingError.Context) -> DecodingError.Context {
            .init(codingPath: path + context.codingPath, debugDescription: context.debugDescription, underlyingError: context.underlyingError)
        }
        switch error {
        case let .keyNotFound(key, found): return DecodingError.keyNotFound(key, context(found))
        case let .valueNotFound(type, found): return DecodingError.valueNotFound(type, context(found))
        case let .typeMismatch(type, found): return DecodingError.typeMismatch(type, context(found))
        case let .dataCorrupted(found): return DecodingError.dataCorrupted(context(found))
        @unknown default: return error
        }
    }

    /// What the JSON value at `offset` is, for error messages.
    static func kind(at offset: Int, in scanner: JSONScanner) -> String {
        switch scanner.byte(at: offset) {
        case UInt8(ascii: "\""): return "a string"
        case UInt8(ascii: "{"): return "an object"
        case UInt8(ascii: "["): return "an array"
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return "a Bool"
        case UInt8(ascii: "n"): return "null"
        case 0: return "nothing"
        default:
            let text = scanner.numberText(at: offset).map { String(decoding: $0.text, as: UTF8.self) } ?? "?"
            return "the number \(text)"
        }
    }
}

/// A coding key the encoder and decoder make themselves: `super`, array positions, and keys
/// of objects read by `allKeys`.
struct ModelKey: CodingKey {
    let stringValue: String
    let intValue: Int?

    init(stringValue: String) {
        self.stringValue = stringValue
        intValue = nil
    }

    init(intValue: Int) {
        stringValue = String(intValue)
        self.intValue = intValue
    }

    static let `super` = ModelKey(stringValue: "super")
}

/// The array types both coders read and write in one loop, by identity.
enum ScalarArrays {
    static let strings = ObjectIdentifier([String].self)
    static let integers = ObjectIdentifier([Int].self)
    static let doubles = ObjectIdentifier([Double].self)
    static let flags = ObjectIdentifier([Bool].self)
}

extension ModelCoding {
    /// The error for a `type` expected at `offset` where something else is: `valueNotFound` for
    /// `null`, `typeMismatch` naming what is there otherwise (`JSONDecoder`'s errors).
    static func mismatch(_ type: Any.Type, at offset: Int, in scanner: JSONScanner, _ path: [any CodingKey]) -> DecodingError {
        let found = kind(at: offset, in: scanner)
        if found == "null" {
            return .valueNotFound(type, .init(codingPath: path, debugDescription: "expected \(type), found null"))
        }
        return .typeMismatch(type, .init(codingPath: path, debugDescription: "expected \(type), found \(found)"))
    }

    /// The array at `offset`, each element read by `read` (the one loop of every array read:
    /// generated code and the `Codable` decoder); `arrayEnd` is set past it.
    /// - Throws: `mismatch` when `offset` holds no array or an element is not a `V` (its path
    ///   `path` and the element's index).
    @inline(__always)
    static func array<V>(
        at offset: Int, in scanner: JSONScanner, _ path: @autoclosure () -> [any CodingKey], arrayEnd: inout Int,
        _ read: (JSONScanner, Int) -> (value: V, end: Int)?
    ) throws -> [V] {
        guard scanner.byte(at: offset) == UInt8(ascii: "[") else { throw mismatch([V].self, at: offset, in: scanner, path()) }
        var values: [V] = []
        values.reserveCapacity(scanner.elementCount(ofArrayAt: offset))
        var next = scanner.firstElement(ofArrayAt: offset)
        var end = offset + 2  // `[]`
        while let element = next {
            guard let (value, elementEnd) = read(scanner, element) else {
                throw mismatch(V.self, at: element, in: scanner, path() + [ModelKey(intValue: values.count)])
            }
            values.append(value)
            next = scanner.element(after: elementEnd, arrayEnd: &end)
        }
        arrayEnd = end
        return values
    }
}

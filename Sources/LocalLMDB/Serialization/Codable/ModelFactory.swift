import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// Builds models from JSON that LocalLMDB did not write, such as a web service's response
/// (RSDSerialization's `ModelFactory`), with the same `Decodable` decoder reads use.
///
/// ```swift
/// let result = try ModelFactory.models(Person.self, fromJSONArray: data,
///                                      options: ImportOptions(dates: .pattern("yyyy-MM-dd'T'HH:mm:ssX")))
/// try await database.write(contentsOf: result.models)
/// for issue in result.skipped { print("element \(issue.index): \(issue.path): \(issue.reason)") }
/// ```
///
/// Required and optional fields are the model's own: a non-optional property must be present
/// and of its type; an optional one may be missing or `null` (decoded as nil). An element that
/// breaks this is, by default, left out and reported in `ImportResult.skipped` with its index,
/// coding path and reason, and the others are built (one bad element does not lose a response);
/// with `ImportOptions.invalidElements` `.fail`, the call throws instead.
///
/// Numbers are read as `JSONDecoder` reads them: a JSON string is never a `Double`, `Float` or
/// `Decimal` (`"NaN"` and `"Infinity"` are LocalLMDB's stored forms of those doubles, not a web
/// service's). A number beyond `Double`'s range (`1e400`) in a field the model reads is a
/// mistyped field (never infinity); in a member it does not read, it is no error.
public enum ModelFactory {
    /// Every element of the JSON array `json` as a `T`.
    /// - Throws: `LocalDatabaseError.invalidJSON` when `json` is not a JSON array;
    ///   `.invalidElement` for the first element that cannot be built, with `.fail`.
    public static func models<T: Decodable>(_ type: T.Type = T.self, fromJSONArray json: Data, options: ImportOptions = ImportOptions()) throws(LocalDatabaseError) -> ImportResult<T> {
        let document = try LocalDatabaseError.publishing { () throws(DatabaseError) in try Document(json) }
        let scanner = document.value.scanner
        guard scanner.byte(at: 0) == UInt8(ascii: "[") else {
            throw .invalidJSON(reason: "expected an array of objects, found \(ModelCoding.kind(at: 0, in: scanner))", offset: 0)
        }
        let dates = DateDecoding(options.dates)
        var models: [T] = []
        var skipped: [ImportIssue] = []
        var next = scanner.firstElement(ofArrayAt: 0)
        var index = 0
        while let offset = next {
            let decoder = ModelDecoder(value: document.value.nestedObject(at: offset), codingPath: [], dates: dates, foreign: true)
            do {
                models.append(try type.init(from: decoder))
            } catch {
                let issue = ImportIssue(index: index, error: error)
                if options.invalidElements == .fail { throw .invalidElement(index: issue.index, path: issue.path, reason: issue.reason) }
                skipped.append(issue)
            }
            index += 1
            next = scanner.nextElement(after: scanner.end(ofValueAt: offset))
        }
        return ImportResult(models: models, skipped: skipped)
    }

    /// The JSON document `json` (an object, usually) as a `T`.
    /// - Throws: `LocalDatabaseError.invalidJSON` when `json` is not JSON; `.invalidElement`
    ///   (index 0) when it cannot be built as a `T`.
    public static func model<T: Decodable>(_ type: T.Type = T.self, fromJSON json: Data, dates: DateFormat = .iso8601) throws(LocalDatabaseError) -> T {
        let document = try LocalDatabaseError.publishing { () throws(DatabaseError) in try Document(json) }
        do {
            return try type.init(from: ModelDecoder(value: document.value, codingPath: [], dates: DateDecoding(dates), foreign: true))
        } catch {
            let issue = ImportIssue(index: 0, error: error)
            throw .invalidElement(index: 0, path: issue.path, reason: issue.reason)
        }
    }

    /// A checked document in bytes of its own; rewritten (each repeated key's last value kept)
    /// when an object in it repeats a key, so that every object names each member once.
    private struct Document {
        let value: EncodedObject

        init(_ json: Data) throws(DatabaseError) {
            let buffer = json.withUnsafeBytes { JSONBuffer(copying: $0) }
            let bytes = UnsafeRawBufferPointer(buffer.bytes)
            // A number beyond `Double`'s range is refused where a model reads it, not here.
            let summary = try JSONValidator.validate(bytes, numbersInRange: false)
            if summary.mayRepeatKeys {
                var writer = JSONWriter()
                writer.write(JSONScanner(bytes).value(at: summary.start, mayRepeatKeys: true).value)
                // Only a tree nested deeper than the thread's stack allows cannot be written back.
                guard !writer.failed else { throw .invalidJSON(reason: StackGuard.refusal, offset: summary.start) }
                let rewritten = JSONBuffer.copying(writer.bytes)
                value = EncodedObject(bytes: UnsafeRawBufferPointer(rewritten.bytes), owner: rewritten)
            } else {
                value = EncodedObject(bytes: UnsafeRawBufferPointer(rebasing: bytes[summary.start...]), owner: buffer)
            }
        }
    }
}

/// How `ModelFactory` reads JSON from elsewhere.
public struct ImportOptions: Sendable {
    /// What to do with an element that cannot be built.
    public enum InvalidElements: Sendable {
        /// Leave it out, and report it in `ImportResult.skipped` (the default).
        case skip
        /// Throw `LocalDatabaseError.invalidElement` for it; no models are returned.
        case fail
    }

    /// How dates are written in the JSON; ISO 8601 by default.
    public var dates: DateFormat
    /// What to do with an element that cannot be built; `.skip` by default.
    public var invalidElements: InvalidElements

    /// Options for reading JSON from elsewhere.
    public init(dates: DateFormat = .iso8601, invalidElements: InvalidElements = .skip) {
        self.dates = dates
        self.invalidElements = invalidElements
    }
}

/// The models `ModelFactory` built, and the elements it left out.
public struct ImportResult<T> {
    /// The models, in the order of their elements.
    public let models: [T]
    /// The elements left out, in order.
    public let skipped: [ImportIssue]
}

/// An element `ModelFactory` could not build.
public struct ImportIssue: Sendable, Equatable, CustomStringConvertible {
    /// The element's position in the array.
    public let index: Int
    /// Where in the element (`address.zip`, `tags[2]`); empty for the element itself.
    public let path: String
    /// What is wrong: a missing field, a `null` or mistyped value, or what `init(from:)` threw.
    public let reason: String

    init(index: Int, error: any Error) {
        self.index = index
        switch ModelCoding.decodingError(error, id: "", className: "") {
        case let .decodingFailed(_, _, path, reason):
            (self.path, self.reason) = (path, reason)
        case let other:
            (path, reason) = ("", other.description)
        }
    }

    /// `element 3 at address.zip: …`.
    public var description: String {
        "element \(index)" + (path.isEmpty ? "" : " at \(path)") + ": \(reason)"
    }
}

import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import Testing

// Shared by the Codable suites: both faces on one directory, value comparison that tells NaNs,
// signed zeros apart, and a way to store any JSON text as a
// record of any class (records as another version of an app may have left them).

/// A `LocalDatabase` and a `SerializationDatabase` on one fresh directory (one environment).
nonisolated(nonsending) func withBothFaces<R>(_ body: (LocalDatabase, SerializationDatabase) async throws -> R) async throws -> R {
    try await withDatabase { database, directory in
        let sync = try SerializationDatabase(directory: directory)
        defer { sync.close() }
        return try await body(database, sync)
    }
}

/// A record holding exactly the JSON text `json`: written, it is stored under the class its
/// `"object"` member names, with its members as they are. Lets a test store records that no
/// current model would write (a missing field, a mistyped one, an old class name).
final class CbRawRecord: Storable {
    let json: String
    init(_ json: String) { self.json = json }
    required init(dataObject: DataObject) { json = dataObject.toRawString() ?? "" }
    func toDataObject() -> DataObject { DataObject(rawString: json) }
}

/// Value equality for round trips: bit patterns for floating point (so NaN payloads and -0.0
/// count), NaN for NaN for `Decimal`, and dates exactly.
protocol CbSame {
    func same(_ other: Self) -> Bool
}

extension CbSame where Self: Equatable {
    func same(_ other: Self) -> Bool { self == other }
}

extension String: CbSame {}
extension Bool: CbSame {}
extension Int: CbSame {}
extension Int8: CbSame {}
extension Int16: CbSame {}
extension Int32: CbSame {}
extension Int64: CbSame {}
extension UInt: CbSame {}
extension UInt8: CbSame {}
extension UInt16: CbSame {}
extension UInt32: CbSame {}
extension UInt64: CbSame {}
extension UUID: CbSame {}
extension Data: CbSame {}
extension URL: CbSame {}
extension Set: CbSame {}

extension Double: CbSame {
    func same(_ other: Double) -> Bool { bitPattern == other.bitPattern }
}

extension Float: CbSame {
    func same(_ other: Float) -> Bool { bitPattern == other.bitPattern }
}

extension Decimal: CbSame {
    func same(_ other: Decimal) -> Bool { isNaN ? other.isNaN : (!other.isNaN && self == other) }
}

extension Date: CbSame {
    /// `other` is this very date: dates are stored exactly, sub-millisecond parts included.
    func same(_ other: Date) -> Bool {
        other.timeIntervalSinceReferenceDate.bitPattern == timeIntervalSinceReferenceDate.bitPattern
    }
}

extension Optional: CbSame where Wrapped: CbSame {
    func same(_ other: Wrapped?) -> Bool {
        switch (self, other) {
        case (nil, nil): return true
        case let (value?, otherValue?): return value.same(otherValue)
        default: return false
        }
    }
}

extension Array: CbSame where Element: CbSame {
    func same(_ other: [Element]) -> Bool {
        count == other.count && zip(self, other).allSatisfy { $0.same($1) }
    }
}

extension Dictionary: CbSame where Value: CbSame {
    func same(_ other: [Key: Value]) -> Bool {
        count == other.count && allSatisfy { key, value in other[key].map { value.same($0) } ?? false }
    }
}

extension LocalDatabaseError {
    /// The parts of a `decodingFailed`, nil for any other error.
    var decodingFailure: (id: String, className: String, path: String, reason: String)? {
        if case let .decodingFailed(id, className, path, reason) = self { return (id, className, path, reason) }
        return nil
    }

    /// The parts of an `unencodableValue`, nil for any other error.
    var unencodable: (id: String, path: String, reason: String)? {
        if case let .unencodableValue(id, path, reason) = self { return (id, path, reason) }
        return nil
    }
}

/// The `LocalDatabaseError` `body` throws; nil (and a recorded issue) when it throws none or another error.
func caughtError(sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void) async -> LocalDatabaseError? {
    do {
        try await body()
        Issue.record("expected an error, got none", sourceLocation: sourceLocation)
    } catch let error as LocalDatabaseError {
        return error
    } catch {
        Issue.record("unexpected error type: \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// The JSON text `text` as a Foundation tree, for comparing stored forms without caring about member order.
func jsonTree(_ text: String?) -> NSDictionary? {
    guard let data = text?.data(using: .utf8) else { return nil }
    return (try? JSONSerialization.jsonObject(with: data)) as? NSDictionary
}

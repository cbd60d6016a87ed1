import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// Optionals, to tell `.some(nil)` of a nested optional from `nil`: JSON has one `null`, and
/// reading it gives the outer nil, so a nested optional holding nil cannot be stored faithfully.
protocol NestedOptional {
    var isNone: Bool { get }
}

enum NestedOptionals {
    static func refusal(_ path: [any CodingKey]) -> EncodingError {
        EncodingError.invalidValue(Optional<Int>.none as Any, .init(
            codingPath: path,
            debugDescription: "an optional holding a nil optional (.some(nil)) would read back as nil; JSON has one null"))
    }
}

extension Optional: NestedOptional {
    var isNone: Bool { self == nil }
}

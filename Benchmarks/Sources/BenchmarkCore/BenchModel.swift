import Foundation
import LocalLMDB

/// The models the comparison runs: each contender stores the chosen one in its own idiom.
public enum BenchModel: String, Sendable, CaseIterable {
    /// `BenchStudent`: 8 fields, about 300 bytes of JSON.
    case student
    /// `BenchOrder`: 16 fields, about 800 bytes of JSON.
    case wide

    /// The model's name in the report.
    public var title: String {
        switch self {
        case .student: "Student"
        case .wide: "Order (wide)"
        }
    }

    /// The model's fields, for the report.
    public var shape: String {
        switch self {
        case .student:
            "8 fields: 3 strings, 2 Ints, a Double, an array of 4 strings and a nested address of 3 strings"
        case .wide:
            "16 fields: 6 strings of 17–105 bytes (a description of ~100), 4 Ints, 2 Doubles, a Bool, "
                + "an array of 5 strings, an array of 4 Ints and a nested shipping address of 5 strings"
        }
    }

    /// The hand-written model's class name, which LocalLMDB and SwiftLocal store it under.
    public var className: String {
        switch self {
        case .student: "BenchStudent"
        case .wide: "BenchOrder"
        }
    }

    /// The JSON LocalLMDB stores for the hand-written object of `index`.
    public func json(index: Int) -> [UInt8] {
        switch self {
        case .student: Array(BenchStudent(index: index).toDataObject().rawData)
        case .wide: Array(BenchOrder(index: index).toDataObject().rawData)
        }
    }

    /// The field a read by id returns for the object of `index` (the student's age, the order's
    /// quantity).
    public func probe(index: Int) -> Int {
        switch self {
        case .student: BenchStudent(index: index).probe
        case .wide: BenchOrder(index: index).probe
        }
    }

    /// The mean size of the stored JSON of objects `0..<count`, from a thousand of them spread evenly.
    public func meanJSONBytes(of count: Int) -> Double {
        let sample = Array(stride(from: 0, to: max(1, count), by: max(1, count / 1000)))
        return Double(sample.reduce(0) { $0 + json(index: $1).count }) / Double(sample.count)
    }
}

/// A benchmark object, built from its index.
public protocol BenchObject {
    init(index: Int)
    /// The field a read by id returns, so that the read cannot be optimised away.
    var probe: Int { get }
}

extension BenchStudent: BenchObject {
    public var probe: Int { age }
}

extension BenchCodableStudent: BenchObject {
    public var probe: Int { age }
}

extension BenchOrder: BenchObject {
    public var probe: Int { quantity }
}

extension BenchCodableOrder: BenchObject {
    public var probe: Int { quantity }
}

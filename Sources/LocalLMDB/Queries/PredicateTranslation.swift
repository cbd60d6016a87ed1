import Foundation

/// What an index can take of a `Predicate`: conditions on stored fields that every model the
/// predicate accepts meets (a superset of its matches, never fewer), and whether they select
/// exactly its matches.
///
/// The rule that keeps answers right: a predicate part is turned into a condition only when
/// the stored form compares as Swift does, or selects more (then the part is *inexact* and the
/// predicate is still evaluated on each decoded model). A part it cannot turn into one is left
/// out, which selects more too. So an index only ever narrows where the predicate is evaluated.
///
/// - Exact: `==`, `<`, `<=`, `>`, `>=` between a stored property and a constant of `String`,
///   `Bool` (equality) or an integer type of at most 64 bits, signed or narrower; `== nil`;
///   `&&` of exact parts; `||` of equalities on one field; `contains` of a constant in an array
///   property an `each` index takes, or of the property in a constant array.
/// - Inexact (evaluated again): `Double`, `Float` (NaN compares unequal in Swift, equal in an
///   index), `Date` (compared as the index stores it), `UInt`/`UInt64`, `UUID`, enums with raw
///   values (`==` may be their own), `starts(with:)` (characters, not bytes).
/// - Left to the evaluation: everything else (`!=`, `!`, optional chaining, computed values,
///   methods, closures).
struct PredicateTranslation: Sendable {
    /// A condition the predicate implies.
    struct Condition: Sendable {
        let path: [String]
        let condition: QueryCondition
        /// On the elements of an array field: only an `each` index takes it (`QueryPlan` drops
        /// it otherwise).
        var onElements = false
    }

    var conditions: [Condition] = []
    var isExact = true

    /// The translation of `predicate` over `T`'s stored properties.
    static func of<T>(_ predicate: Predicate<T>, over type: T.Type) -> PredicateTranslation {
        guard let stored = T.self as? any StoredValue.Type,
              let expression = predicate.expression as? any TranslatableExpression else { return PredicateTranslation(isExact: false) }
        let context = Context(variable: predicate.variable.key, root: stored)
        return expression.translation(in: context) ?? PredicateTranslation(isExact: false)
    }

    /// The translation of a predicate evaluated without index help: no conditions, inexact.
    static let none = PredicateTranslation(isExact: false)

    /// The parts `&&` joins: both sides' conditions; exact when both are.
    static func conjunction(_ left: PredicateTranslation?, _ right: PredicateTranslation?) -> PredicateTranslation {
        let left = left ?? .none
        let right = right ?? .none
        return PredicateTranslation(conditions: left.conditions + right.conditions, isExact: left.isExact && right.isExact)
    }

    /// The parts `||` joins: one condition `isIn` when both are equalities (or `isIn`) on one
    /// field; otherwise nothing an index can take.
    static func disjunction(_ left: PredicateTranslation?, _ right: PredicateTranslation?) -> PredicateTranslation? {
        guard let left, let right, left.conditions.count == 1, right.conditions.count == 1, !left.conditions[0].onElements, !right.conditions[0].onElements,
              left.conditions[0].path == right.conditions[0].path,
              let leftValues = left.conditions[0].condition.equalValues,
              let rightValues = right.conditions[0].condition.equalValues else { return nil }
        return PredicateTranslation(
            conditions: [Condition(path: left.conditions[0].path, condition: QueryCondition(kind: .isIn(leftValues + rightValues)))],
            isExact: left.isExact && right.isExact)
    }

    /// What a translation needs of its predicate: the input variable, and the type whose stored
    /// fields key paths from it name.
    struct Context {
        let variable: PredicateExpressions.VariableID
        let root: any StoredValue.Type

        /// The stored path of the key paths `components` (one property each, as `#Predicate`
        /// writes them) from the input: each looked up in the table of the type it starts from
        /// (no key path is made by appending, which costs more than the lookups).
        func resolve(_ components: [AnyKeyPath]) -> [String]? {
            guard !components.isEmpty else { return nil }
            var type = root
            var path: [String] = []
            for (position, component) in components.enumerated() {
                guard let keys = type.storedPath(of: component) else { return nil }
                path += keys
                if position < components.count - 1 {
                    guard let next = Swift.type(of: component).valueType as? any StoredValue.Type else { return nil }
                    type = next
                }
            }
            return path
        }
    }
}

extension QueryCondition {
    /// The values an equality condition accepts (`equals`, `isIn`); nil for any other.
    var equalValues: [QueryValue]? {
        switch kind {
        case let .equals(value): [value]
        case let .isIn(values): values
        default: nil
        }
    }
}

extension StoredValue {
    /// The stored path of `keyPath`, when it is a key path of this type.
    static func storedPath(of keyPath: AnyKeyPath) -> [String]? {
        StoredPaths.path(of: keyPath, in: Self.self)
    }
}

/// How values of a Swift type compare in an index, against Swift's own comparison.
enum TranslatedType {
    /// Equal and ordered in an index exactly as in Swift.
    case exact
    /// Equal exactly; not ordered (`Bool`).
    case exactEquality
    /// An index selects every value Swift would, and maybe more: equality and order.
    case superset
    /// An index selects every value Swift would, and maybe more: equality only.
    case supersetEquality
    /// Not turned into conditions.
    case none

    init(_ type: Any.Type) {
        var type = type
        while let optional = type as? any OptionalProtocol.Type { type = optional.wrappedType }
        switch type {
        case is String.Type, is Int.Type, is Int64.Type, is Int32.Type, is Int16.Type, is Int8.Type,
             is UInt32.Type, is UInt16.Type, is UInt8.Type:
            self = .exact
        case is Bool.Type: self = .exactEquality
        case is Double.Type, is Float.Type, is Date.Type, is UInt.Type, is UInt64.Type: self = .superset
        case is UUID.Type: self = .supersetEquality
        default:
            if let raw = type as? any RawRepresentable.Type, Self.rawValueIsStorable(raw) {
                self = .supersetEquality
            } else {
                self = .none
            }
        }
    }

    private static func rawValueIsStorable<R: RawRepresentable>(_ type: R.Type) -> Bool {
        R.RawValue.self == String.self || R.RawValue.self == Int.self
    }

    var equality: Bool { self != .none }
    var order: Bool { self == .exact || self == .superset }
    var isExact: Bool { self == .exact || self == .exactEquality }
}

/// A predicate expression this module can translate (conformances below, on Foundation's
/// `PredicateExpressions` types).
protocol TranslatableExpression {
    /// The conditions the expression (of `Bool`) implies; nil when there are none to take.
    func translation(in context: PredicateTranslation.Context) -> PredicateTranslation?
}

/// A key path expression from the predicate's input: its key paths from the input, one per
/// property (empty for the input itself).
protocol KeyPathOperand {
    func components(in context: PredicateTranslation.Context) -> [AnyKeyPath]?
    /// The type of the value it reads.
    static var valueType: Any.Type { get }
}

/// A constant in a predicate.
protocol ValueOperand {
    var constant: Any { get }
    static var valueType: Any.Type { get }
}

extension PredicateExpressions.Variable: KeyPathOperand {
    func components(in context: PredicateTranslation.Context) -> [AnyKeyPath]? {
        key == context.variable ? [] : nil
    }
    static var valueType: Any.Type { Output.self }
}

extension PredicateExpressions.KeyPath: KeyPathOperand {
    func components(in context: PredicateTranslation.Context) -> [AnyKeyPath]? {
        guard let root = root as? any KeyPathOperand, let above = root.components(in: context) else { return nil }
        return above + [keyPath]
    }
    static var valueType: Any.Type { Output.self }
}

extension PredicateExpressions.Value: ValueOperand {
    var constant: Any { value }
    static var valueType: Any.Type { Output.self }
}

extension PredicateExpressions.NilLiteral: ValueOperand {
    var constant: Any { Optional<Wrapped>.none as Any }
    static var valueType: Any.Type { Optional<Wrapped>.self }
}

/// A comparison between a stored field and a constant, whichever side each is on.
private struct FieldAndConstant {
    let path: [String]
    let type: TranslatedType
    let constant: Any
    /// The constant is on the left (`3 < $0.age`).
    let constantFirst: Bool

    init?(_ lhs: Any, _ rhs: Any, in context: PredicateTranslation.Context) {
        if let field = lhs as? any KeyPathOperand, let value = rhs as? any ValueOperand {
            self.init(field, value, constantFirst: false, context)
        } else if let value = lhs as? any ValueOperand, let field = rhs as? any KeyPathOperand {
            self.init(field, value, constantFirst: true, context)
        } else {
            return nil
        }
    }

    private init?(_ field: any KeyPathOperand, _ value: any ValueOperand, constantFirst: Bool, _ context: PredicateTranslation.Context) {
        guard let components = field.components(in: context), let path = context.resolve(components) else { return nil }
        self.path = path
        type = TranslatedType(Swift.type(of: field).valueType)
        constant = value.constant
        self.constantFirst = constantFirst
    }

    /// The constant as a value to compare with: nil for `nil`, which only `isNil` takes.
    var value: QueryValue? {
        if let optional = constant as? any OptionalProtocol {
            guard let wrapped = optional.wrappedValue else { return nil }
            return Self.queryValue(wrapped)
        }
        return Self.queryValue(constant)
    }

    private static func queryValue(_ value: Any) -> QueryValue? {
        guard let encodable = value as? any Encodable else { return nil }
        return QueryValue(encodable)
    }
}

extension PredicateExpressions.Conjunction: TranslatableExpression {
    func translation(in context: PredicateTranslation.Context) -> PredicateTranslation? {
        PredicateTranslation.conjunction(
            (lhs as? any TranslatableExpression)?.translation(in: context),
            (rhs as? any TranslatableExpression)?.translation(in: context))
    }
}

extension PredicateExpressions.Disjunction: TranslatableExpression {
    func translation(in context: PredicateTranslation.Context) -> PredicateTranslation? {
        PredicateTranslation.disjunction(
            (lhs as? any TranslatableExpression)?.translation(in: context),
            (rhs as? any TranslatableExpression)?.translation(in: context))
    }
}

extension PredicateExpressions.Equal: TranslatableExpression {
    func translation(in context: PredicateTranslation.Context) -> PredicateTranslation? {
        guard let operands = FieldAndConstant(lhs, rhs, in: context), operands.type.equality else { return nil }
        guard let value = operands.value else {
            // `== nil`: missing or null, exactly.
            return PredicateTranslation(conditions: [.init(path: operands.path, condition: .isNil)], isExact: true)
        }
        return PredicateTranslation(conditions: [.init(path: operands.path, condition: QueryCondition(kind: .equals(value)))], isExact: operands.type.isExact)
    }
}

extension PredicateExpressions.Comparison: TranslatableExpression {
    func translation(in context: PredicateTranslation.Context) -> PredicateTranslation? {
        guard let operands = FieldAndConstant(lhs, rhs, in: context), operands.type.order, let value = operands.value else { return nil }
        // The field's side: `3 < $0.age` is `$0.age > 3`.
        var op = self.op
        if operands.constantFirst {
            op = switch op {
            case .lessThan: .greaterThan
            case .lessThanOrEqual: .greaterThanOrEqual
            case .greaterThan: .lessThan
            case .greaterThanOrEqual: .lessThanOrEqual
            @unknown default: op
            }
        }
        // An inexact type's bound is inclusive: a value its stored form rounds to the bound's
        // (a date's sub-microsecond part) is still taken, and evaluated.
        let strict = operands.type.isExact
        let kind: QueryCondition.Kind
        switch op {
        case .lessThan: kind = .range(lower: nil, lowerInclusive: true, upper: value, upperInclusive: !strict)
        case .lessThanOrEqual: kind = .range(lower: nil, lowerInclusive: true, upper: value, upperInclusive: true)
        case .greaterThan: kind = .range(lower: value, lowerInclusive: !strict, upper: nil, upperInclusive: true)
        case .greaterThanOrEqual: kind = .range(lower: value, lowerInclusive: true, upper: nil, upperInclusive: true)
        @unknown default: return nil
        }
        return PredicateTranslation(conditions: [.init(path: operands.path, condition: QueryCondition(kind: kind))], isExact: operands.type.isExact)
    }
}

extension PredicateExpressions.SequenceContains: TranslatableExpression {
    func translation(in context: PredicateTranslation.Context) -> PredicateTranslation? {
        // A constant array containing the field: `isIn`.
        if let values = sequence as? any ValueOperand, let field = element as? any KeyPathOperand,
           let components = field.components(in: context), let path = context.resolve(components) {
            let type = TranslatedType(Swift.type(of: field).valueType)
            guard type.equality, let elements = values.constant as? any Sequence else { return nil }
            var queryValues: [QueryValue] = []
            for element in elements {
                if let optional = element as? any OptionalProtocol, optional.wrappedValue == nil { return nil }
                guard let encodable = element as? any Encodable else { return nil }
                queryValues.append(QueryValue(encodable))
            }
            return PredicateTranslation(conditions: [.init(path: path, condition: QueryCondition(kind: .isIn(queryValues)))], isExact: type.isExact)
        }
        // An array field containing a constant: an equality on its elements, which only an
        // `each` index takes (`QueryPlan` checks the field is one; otherwise it drops it).
        if let field = sequence as? any KeyPathOperand, let value = element as? any ValueOperand,
           let components = field.components(in: context), let path = context.resolve(components) {
            let type = TranslatedType(Swift.type(of: value).valueType)
            guard type.equality, !(value.constant is any OptionalProtocol), let encodable = value.constant as? any Encodable else { return nil }
            return PredicateTranslation(
                conditions: [.init(path: path, condition: QueryCondition(kind: .equals(QueryValue(encodable))), onElements: true)], isExact: type.isExact)
        }
        return nil
    }
}

extension PredicateExpressions.SequenceStartsWith: TranslatableExpression {
    func translation(in context: PredicateTranslation.Context) -> PredicateTranslation? {
        // Characters, not bytes: a string whose next scalar combines with the prefix's last
        // starts with its bytes only. The index takes those; evaluation decides.
        guard let field = base as? any KeyPathOperand, let value = prefix as? any ValueOperand,
              Swift.type(of: field).valueType == String.self, let text = value.constant as? String,
              let components = field.components(in: context), let path = context.resolve(components) else { return nil }
        return PredicateTranslation(conditions: [.init(path: path, condition: .hasPrefix(text))], isExact: false)
    }
}

extension PredicateExpressions.KeyPath: TranslatableExpression where Output == Bool {
    /// A `Bool` property alone: `#Predicate { $0.isActive }`.
    func translation(in context: PredicateTranslation.Context) -> PredicateTranslation? {
        guard let components = components(in: context), let path = context.resolve(components) else { return nil }
        return PredicateTranslation(conditions: [.init(path: path, condition: .equals(true))], isExact: true)
    }
}

extension PredicateExpressions.Value: TranslatableExpression where Output == Bool {
    /// `true` takes every record; `false` none (evaluated: the index has no empty condition).
    func translation(in context: PredicateTranslation.Context) -> PredicateTranslation? {
        value ? PredicateTranslation() : nil
    }
}

import Foundation
import LocalLMDBStore

extension Index {
    /// An index on the stored properties `keyPaths` of a macro'd type, in this order: nested
    /// ones (`\User.address.city`) and several (a compound index), checked by the compiler. A
    /// first property that is an array is indexed element by element (as `each`), a `Date`
    /// chronologically, as `@Indexed` does. `#StoredIndex` declares one inside the type.
    ///
    /// A key path that names no stored field (a `@NotStored` property, a computed one) makes
    /// the type's first write or query throw `LocalDatabaseError.invalidQuery`.
    public static func on<Root: StoredValue>(_ keyPaths: PartialKeyPath<Root>..., unique: Bool = false, counted: Bool = false) -> Index {
        var fields: [IndexDefinition.Field] = []
        var problem: String?
        for keyPath in keyPaths {
            guard let path = StoredPaths.path(of: keyPath, in: Root.self) else {
                problem = problem ?? "the key path \(keyPath) is not a stored property of \(Root.self) (nor of a stored value in it)"
                continue
            }
            fields.append(IndexDefinition.Field(path: path, kind: isDate(type(of: keyPath).valueType) ? .date : .automatic))
        }
        if keyPaths.isEmpty { problem = "an index needs a key path" }
        let multiEntry = keyPaths.first.map { isArray(type(of: $0).valueType) } ?? false
        return Index(
            definition: IndexDefinition(fields: fields, isUnique: unique, isMultiEntry: multiEntry, isCounted: counted && !multiEntry),
            problem: problem)
    }

    private static func unwrapped(_ type: Any.Type) -> Any.Type {
        var type = type
        while let optional = type as? any OptionalProtocol.Type { type = optional.wrappedType }
        return type
    }

    private static func isDate(_ type: Any.Type) -> Bool { unwrapped(type) == Date.self }
    private static func isArray(_ type: Any.Type) -> Bool { unwrapped(type) is any StoredArray.Type }
}

/// Arrays, for `Index.on` by key path (an array property is indexed element by element).
protocol StoredArray {}
extension Array: StoredArray {}

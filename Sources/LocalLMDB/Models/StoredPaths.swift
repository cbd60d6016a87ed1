import LocalLMDBLMDB

/// The stored field paths of a `StoredValue` type's key paths: `\User.email` → `["email"]`,
/// `\User.address.city` → `["address", "city"]` (its own keys, through nested `StoredValue`
/// types, each with its coding keys). Worked out once per type, from the tables the macros
/// generate.
enum StoredPaths {
    /// Nested values are followed this many levels deep (a type may nest itself).
    static let maxDepth = 6

    private struct Table: @unchecked Sendable {
        // Key paths are immutable once made; `AnyKeyPath` is not declared `Sendable`.
        let paths: [AnyKeyPath: [String]]
    }

    private static let tables = Locked<[ObjectIdentifier: Table]>([:])

    /// The stored path of `keyPath`, a key path of `T`; nil when it names no stored field.
    static func path<T: StoredValue>(of keyPath: AnyKeyPath, in type: T.Type) -> [String]? {
        let id = ObjectIdentifier(type)
        if let table = tables.withLock({ $0[id] }) { return table.paths[keyPath] }
        var paths: [AnyKeyPath: [String]] = [:]
        collect(T._storedProperties.map { ($0.keyPath as AnyKeyPath, [$0.key], $0.nested) }, into: &paths, depth: 1)
        tables.withLock { $0[id] = Table(paths: paths) }
        return paths[keyPath]
    }

    private static func collect(_ found: [(AnyKeyPath, [String], (any StoredValue.Type)?)], into paths: inout [AnyKeyPath: [String]], depth: Int) {
        for (keyPath, path, nested) in found {
            if paths[keyPath] == nil { paths[keyPath] = path }
            guard let nested, depth < maxDepth else { continue }
            let below = properties(of: nested).compactMap { property -> (AnyKeyPath, [String], (any StoredValue.Type)?)? in
                keyPath.appending(path: property.keyPath).map { ($0, path + [property.key], property.nested) }
            }
            collect(below, into: &paths, depth: depth + 1)
        }
    }

    private static func properties<V: StoredValue>(of type: V.Type) -> [(keyPath: AnyKeyPath, key: String, nested: (any StoredValue.Type)?)] {
        V._storedProperties.map { ($0.keyPath as AnyKeyPath, $0.key, $0.nested) }
    }
}

extension Query where T: StoredValue {
    /// The records whose stored property at `keyPath` (`\.email`, `\.address.city`) meets
    /// `condition`: `filter(_:_:)` with the field the key path names, checked by the compiler.
    /// A key path to a property that is not stored makes the query throw
    /// `LocalDatabaseError.invalidQuery` when it runs.
    public func filter<V>(_ keyPath: KeyPath<T, V>, _ condition: QueryCondition) -> Query {
        guard let path = StoredPaths.path(of: keyPath, in: T.self) else { return unresolved(keyPath) }
        var query = self
        query.conditions.append((path, condition))
        return query
    }

    /// The records in the order of the stored property at `keyPath` (descending: largest first).
    public func sorted<V>(by keyPath: KeyPath<T, V>, descending: Bool = false) -> Query {
        guard let path = StoredPaths.path(of: keyPath, in: T.self) else { return unresolved(keyPath) }
        var query = self
        query.order = (path, descending)
        query.sortDescriptors = []
        return query
    }

    private func unresolved(_ keyPath: AnyKeyPath) -> Query {
        var query = self
        if query.unresolvedKeyPath == nil { query.unresolvedKeyPath = "\(keyPath)" }
        return query
    }
}

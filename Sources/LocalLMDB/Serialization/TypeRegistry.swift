import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// The process-wide map between Swift types and the class names they are stored under.
///
/// Every `Storable` type has one `StoredClass`, fixed at its first use in the process: its
/// short Swift name (SwiftLocal's stored form) or the name it was registered under, with its
/// mangled name. Each database records which type owns each name (`RecordStore.claim`), so a
/// fresh process can restore a subclass or a nested object's class it has not touched yet, and
/// two types with the same short name are never merged.
///
/// Resolving a stored name to a type, in order:
/// 1. a type registered explicitly under that name (`StoredClasses.register`);
/// 2. the type the database says owns the name, by its mangled name (nil when this process
///    cannot load it: the name is then unresolvable, never guessed);
/// 3. when the database has no owner for the name, the one type this process has seen under it.
final class TypeRegistry: Sendable {
    static let shared = TypeRegistry()

    /// Unchecked: the only non-`Sendable` members are metatypes, which are immutable values.
    private struct State: @unchecked Sendable {
        /// Each type's stored class, fixed at first use.
        var classes: [ObjectIdentifier: StoredClass] = [:]
        /// Types registered explicitly, by stored name.
        var explicit: [String: any Persistable.Type] = [:]
        /// Custom names given before first use, by type.
        var customNames: [ObjectIdentifier: String] = [:]
        /// The first type seen under each name in this process.
        var seen: [String: any Persistable.Type] = [:]
        /// Names under which this process has seen more than one type.
        var ambiguous: Set<String> = []
        /// Types found by mangled name.
        var byMangledName: [String: any Persistable.Type] = [:]

        mutating func storedClass(of type: any Persistable.Type) -> StoredClass {
            let id = ObjectIdentifier(type)
            if let known = classes[id] { return known }
            let name = customNames[id] ?? String(describing: type)
            let qualified = _typeName(type, qualified: true)
            let storedClass = StoredClass(
                name: name, mangledName: _mangledTypeName(type) ?? qualified, qualifiedName: qualified,
                adopts: explicit[name].map { $0 == type } ?? false)
            classes[id] = storedClass
            if let other = seen[name] {
                if other != type { ambiguous.insert(name) }
            } else {
                seen[name] = type
            }
            return storedClass
        }
    }

    private let state = Locked(State())

    /// The name `type` is stored under.
    static func name(of type: any Persistable.Type, scratch: ClassCache = .current) -> String {
        scratch.name(of: ObjectIdentifier(type)) ?? storedClass(of: type, scratch: scratch).name
    }

    /// The stored class of the type with identity `id`, if that type has been named before.
    static func storedClass(ofID id: ObjectIdentifier) -> StoredClass? {
        ClassCache.current.storedClass(of: id) ?? shared.state.withLock { $0.classes[id] }
    }

    /// `type`'s stored class, from the calling thread's cache when it has it.
    static func storedClass(of type: any Persistable.Type, scratch: ClassCache = .current) -> StoredClass {
        let id = ObjectIdentifier(type)
        if let known = scratch.storedClass(of: id) { return known }
        let storedClass = shared.state.withLock { $0.storedClass(of: type) }
        scratch.remember(storedClass, for: id)
        return storedClass
    }

    /// Registers `type` explicitly under `name` (its short name when nil): reads resolve that
    /// name to it first, and its writes adopt the name in databases where another type owns it.
    /// - Throws: `LocalDatabaseError.classRegistration` when the type was already used under
    ///   another name, or another type is registered under `name`.
    func register(_ type: any Persistable.Type, as name: String?) throws(DatabaseError) {
        try state.withLock { state throws(DatabaseError) in
            let id = ObjectIdentifier(type)
            let name = name ?? state.classes[id]?.name ?? String(describing: type)
            guard !name.isEmpty else {
                throw .classRegistration(type: _typeName(type, qualified: true), reason: "a stored class name must not be empty")
            }
            // The class table separates a row's fields with zero bytes (`StoredClass`): a name
            // holding one would be stored as another name.
            guard !name.utf8.contains(0) else {
                throw .classRegistration(type: _typeName(type, qualified: true), reason: "a stored class name must not contain U+0000")
            }
            if let registered = state.customNames[id], registered != name {
                throw .classRegistration(type: _typeName(type, qualified: true), reason: "it is already registered as '\(registered)'")
            }
            if let other = state.explicit[name], other != type {
                throw .classRegistration(
                    type: _typeName(type, qualified: true),
                    reason: "\(_typeName(other, qualified: true)) is already registered as '\(name)'")
            }
            if let used = state.classes[id] {
                guard used.name == name, used.adopts else {
                    throw .classRegistration(
                        type: _typeName(type, qualified: true),
                        reason: "it was already used as '\(used.name)'; register classes before they are first written or read")
                }
                return
            }
            state.explicit[name] = type
            state.customNames[id] = name
        }
    }

    /// The type that a stored class `name` resolves to, given the database's owner of that
    /// name (`row`, nil when the database has none); nil when no type can be found.
    func type(named name: String, row: StoredClass?) -> (any Persistable.Type)? {
        state.withLock { state in
            if let registered = state.explicit[name] { return registered }
            if let row {
                if let known = state.byMangledName[row.mangledName] { return known }
                guard let found = _typeByName(row.mangledName) as? any Persistable.Type else { return nil }
                state.byMangledName[row.mangledName] = found
                return found
            }
            return state.ambiguous.contains(name) ? nil : state.seen[name]
        }
    }
}

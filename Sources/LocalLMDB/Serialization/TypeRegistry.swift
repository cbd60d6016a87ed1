/// The process-wide map from stored class names to Swift types.
///
/// A type is registered when an instance is encoded (`DataObject(self)`) or a type is read,
/// and each database persists the name with the type's mangled Swift name. A fresh process
/// can therefore restore a subclass, or a nested object's class, that it has not touched
/// yet, with no manual registration: the mangled name is resolved by the Swift runtime.
final class TypeRegistry: Sendable {
    static let shared = TypeRegistry()

    private struct State {
        /// Stored names by type, for every type named so far: `String(describing:)` costs
        /// about a microsecond, and every encode and decode needs a name.
        var names: [ObjectIdentifier: String] = [:]
        /// The types `register` has seen.
        var registered: Set<ObjectIdentifier> = []
        /// Resolved types by stored class name.
        var types: [String: any Storable.Type] = [:]
        /// Mangled names loaded from databases, resolved on first use.
        var persisted: [String: String] = [:]
        /// Every (name, mangled name) registered in this process, in order; databases persist
        /// the entries past the count they last saved.
        var log: [(name: String, mangled: String)] = []

        mutating func name(of type: Any.Type) -> String {
            let id = ObjectIdentifier(type)
            if let name = names[id] { return name }
            let name = String(describing: type)
            names[id] = name
            return name
        }
    }

    private let state = Locked(State())

    /// The name a type is stored under: its unqualified Swift name.
    static func name(of type: Any.Type) -> String {
        let scratch = ReadScratch.current
        let id = ObjectIdentifier(type)
        if let name = scratch.name(of: id) { return name }
        let name = shared.state.withLock { $0.name(of: type) }
        scratch.remember(name, for: id)
        return name
    }

    /// Records `type` under its stored name, and returns that name. Called for every object
    /// encoded, so a type seen before costs one lock and two lookups.
    func register(_ type: any Storable.Type) -> String {
        state.withLock { state in
            let name = state.name(of: type)
            guard state.registered.insert(ObjectIdentifier(type)).inserted else { return name }
            if let known = state.types[name], known == type { return name }
            state.types[name] = type
            if let mangled = _mangledTypeName(type) {
                state.log.append((name, mangled))
            }
            return name
        }
    }

    /// The type stored as `name`, from this process's registrations or a database's records.
    func type(named name: String) -> (any Storable.Type)? {
        state.withLock { state in
            if let type = state.types[name] { return type }
            guard let mangled = state.persisted[name],
                  let type = _typeByName(mangled) as? any Storable.Type else { return nil }
            state.types[name] = type
            return type
        }
    }

    /// Makes names persisted by a database resolvable.
    func adoptPersisted(_ names: [String: String]) {
        state.withLock { state in
            state.persisted.merge(names) { _, new in new }
        }
    }

    /// The registrations after the first `count`, and the new count.
    func registrations(after count: Int) -> (names: [String: String], count: Int) {
        state.withLock { state in
            guard state.log.count > count else { return ([:], count) }
            var names: [String: String] = [:]
            for entry in state.log[count...] { names[entry.name] = entry.mangled }
            return (names, state.log.count)
        }
    }
}

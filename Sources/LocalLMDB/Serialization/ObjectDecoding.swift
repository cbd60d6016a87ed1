/// Chooses the class to restore a stored object as.
enum ObjectDecoding {
    /// How a stored class name relates to a requested type.
    enum Resolution<T> {
        /// Restore as this type: the requested one or a subclass.
        case restore(T.Type)
        /// The name belongs to a known class that is not the requested one or a subclass.
        case unrelated
        /// No class by that name is known to this process or the databases it opened.
        case unknown
    }

    /// Resolves `storedName` (after `Legacy` renames) against the requested type `T`.
    static func resolve<T: Storable>(storedName: String, as requested: T.Type) -> Resolution<T> {
        let requestedName = TypeRegistry.name(of: requested)
        if storedName == requestedName { return .restore(requested) }
        let currentName = Legacy.currentName(of: storedName)
        if currentName == requestedName { return .restore(requested) }
        guard let stored = TypeRegistry.shared.type(named: currentName) else { return .unknown }
        if let subclass = stored as? T.Type { return .restore(subclass) }
        return .unrelated
    }

    /// Restores a nested object: as the class it names when that is `T` or a subclass,
    /// otherwise as `T` itself.
    static func instantiate<T: Storable>(_ requested: T.Type, from object: EncodedObject, spare: inout DataObject?) -> T {
        var type = requested
        if let storedName = object.className, case let .restore(resolved) = resolve(storedName: storedName, as: requested) {
            type = resolved
        }
        return DataObject.restore(type, from: object, spare: &spare)
    }
}

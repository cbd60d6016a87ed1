import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// Chooses the class to restore a stored object as.
///
/// The rule: an object is restored as the class it was stored as, when that is the requested
/// class or a subclass of it. It is never restored as another class: a stored class this
/// process cannot find, one that is not a subclass of the requested class, or a name owned by
/// another type in the database is an error (thrown by the read once the model's initializer
/// returns, for nested objects), so that writing the model back cannot lose fields.
enum ObjectDecoding {
    /// Why an object cannot be restored as the requested class.
    enum Failure: Error {
        /// The stored class is known and is not the requested class or a subclass of it.
        case mismatch(requested: String, stored: String)
        /// The stored class cannot be found in this process.
        case unresolvable(className: String)
        /// The requested class's name is owned by another type in the database.
        case conflict(name: String, owner: StoredClass, requested: StoredClass)
        /// Looking the class up failed.
        case storage(DatabaseError)
        /// The object is nested too deeply for the reading thread's stack (`StackGuard`).
        case tooDeep
        /// A non-optional reference at `field` names `referencedID`, which is not stored.
        case missingReference(field: String, referencedID: String)
        /// A reference names `referencedID`, stored as `stored`, which is not the `requested`
        /// class or a subclass of it.
        case referenceMismatch(referencedID: String, requested: String, stored: String)

        /// The error for a read of the record `id`, stored as `className`.
        func error(id: String, className: String = "") -> DatabaseError {
            switch self {
            case let .mismatch(requested, stored):
                return .typeMismatch(id: id, requested: requested, stored: stored)
            case let .unresolvable(className):
                return .unresolvableClass(id: id, className: className)
            case let .conflict(name, owner, requested):
                return .classNameConflict(name: name, storedBy: owner.displayName, requestedBy: requested.qualifiedName)
            case let .storage(error):
                return error
            case .tooDeep:
                return .decodingFailed(id: id, className: className, path: "", reason: StackGuard.refusal)
            case let .missingReference(field, referencedID):
                return .missingReference(id: id, field: field, referencedID: referencedID)
            case let .referenceMismatch(referencedID, requested, stored):
                return .typeMismatch(id: referencedID, requested: requested, stored: stored)
            }
        }
    }

    /// How a stored class name resolves for a requested type. Not generic, so resolving costs
    /// no generic metadata look-up on the read paths.
    enum Resolution {
        /// Restore as the requested type (the common case).
        case requested
        /// Restore as this type, if it is the requested one or a subclass of it.
        case stored(any Persistable.Type)
        case failure(Failure)
    }

    /// The type to restore an object stored as `storedName` as, when `requested` is asked for.
    static func resolve(
        storedName: String, requested: any Persistable.Type, context: ClassLookup?, scratch: ClassCache
    ) -> Resolution {
        resolve(
            storedName: storedName, requested: requested, requestedName: TypeRegistry.name(of: requested, scratch: scratch),
            context: context, scratch: scratch)
    }

    /// `resolve`, given the requested type's stored name (`TypeRegistry.name(of: requested)`).
    static func resolve(
        storedName: String, requested: any Persistable.Type, requestedName: String, context: ClassLookup?, scratch: ClassCache
    ) -> Resolution {
        let currentName = storedName == requestedName ? storedName : Legacy.currentName(of: storedName)
        do throws(DatabaseError) {
            if currentName == requestedName {
                if let conflict = try conflict(for: ObjectIdentifier(requested), context: context, scratch: scratch) {
                    return .failure(conflict)
                }
                return .requested
            }
            let row = try context?.row(named: currentName)
            guard let stored = TypeRegistry.shared.type(named: currentName, row: row) else {
                return .failure(.unresolvable(className: storedName))
            }
            return .stored(stored)
        } catch {
            return .failure(.storage(error))
        }
    }

    /// A `conflict` when the database's owner of the stored name of the type `id` is another
    /// type (one that an explicit registration of the type does not adopt from); nil when the
    /// type owns the name or nobody does. Remembered per thread once the type is found to own
    /// it in a committed snapshot, so the hot read paths look it up once.
    static func conflict(
        for id: ObjectIdentifier, context: ClassLookup?, scratch: ClassCache = .current
    ) throws(DatabaseError) -> Failure? {
        guard let context else { return nil }
        if scratch.isVerified(id, in: context.database) { return nil }
        guard let requested = TypeRegistry.storedClass(ofID: id), !requested.adopts else { return nil }
        let ownership = try context.ownership(of: requested)
        // Only committed ownership is remembered: a row an open transaction wrote may be rolled back.
        if case .same = ownership, context.seesCommittedState { scratch.rememberVerified(id, in: context.database) }
        guard case let .other(owner) = ownership else { return nil }
        return .conflict(name: requested.name, owner: owner, requested: requested)
    }

    /// Restores a nested object: as the class it names when that is `T` or a subclass, as `T`
    /// when it names none. Any other case is recorded in the thread's scratch, for the database
    /// read under way to throw, and the object is restored as `T` meanwhile (the read will not
    /// return it). Outside a database read (`DataObject(rawString:)`), there is nobody to throw
    /// to: the object is restored as `T`.
    ///
    /// Models nested in one another recurse through here: when the thread's stack is too low to
    /// go deeper (`StackGuard`), the object is restored empty (as from a missing field), and the
    /// read under way throws.
    static func instantiate<T: Storable>(_ requested: T.Type, from object: EncodedObject, spare: inout DataObject?) -> T {
        var type = requested
        let scratch = ReadScratch.current
        guard !CodecScratch.current.stackIsLow else {
            if scratch.isReading, scratch.failure == nil { scratch.failure = .tooDeep }
            return requested.init(dataObject: DataObject(fields: JSONObject()))
        }
        let requestedName = TypeRegistry.name(of: requested, scratch: scratch.classes)
        // Usually the class member comes first and names the requested class as it is spelt.
        let classEnd = object.endOfClassName(spelled: requestedName)
        if let storedName = classEnd != nil ? requestedName : object.className {
            var failure: Failure?
            switch resolve(storedName: storedName, requested: requested, requestedName: requestedName, context: scratch.context, scratch: scratch.classes) {
            case .requested:
                break
            case let .stored(stored):
                if let resolved = stored as? T.Type {
                    type = resolved
                } else {
                    failure = .mismatch(requested: requestedName, stored: storedName)
                }
            case let .failure(found):
                failure = found
            }
            if let failure, scratch.isReading, scratch.failure == nil { scratch.failure = failure }
        }
        // The fields follow the class member: where `DataObject.firstLookup` would start.
        let firstLookup = classEnd.flatMap { object.scanner.nextMember(after: $0) }
        return DataObject.restore(type, from: object, firstLookup: firstLookup, spare: &spare)
    }
}

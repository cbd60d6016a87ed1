import LocalLMDBLMDB
import LocalLMDBStore
import LocalLMDBEngine

/// The stored classes of the types this thread met, and `Legacy`'s answers: so that reads and
/// writes take no lock for class names.
///
/// Confinement: each thread has its own (`ThreadLocal`), used only by synchronous code on it.
final class ClassCache {
    /// The calling thread's cache.
    static var current: ClassCache {
        @inline(__always) get { caches.current }
    }

    private static let caches = ThreadLocal { ClassCache() }

    /// Stored classes by type, most recent last; a few entries, searched linearly. Two arrays
    /// rather than one of pairs, so a search compares identities without copying classes.
    @exclusivity(unchecked) private var classTypes: [ObjectIdentifier] = []
    @exclusivity(unchecked) private var classes: [StoredClass] = []
    private static let classCapacity = 8
    /// Types known to own their stored name in a database, as (database, type); a few entries.
    @exclusivity(unchecked) private var verified: [(database: UInt64, type: ObjectIdentifier)] = []

    /// `Legacy`'s answers on this thread, for the generation of its refactors they hold.
    final class LegacyCache {
        var generation = -1
        var currentNames: [String: String] = [:]
        var allNames: [String: [String]] = [:]
    }

    /// `Legacy`'s answers on this thread.
    let legacy = LegacyCache()

    /// The stored name remembered for `type`, if any (without copying the whole stored class).
    func name(of type: ObjectIdentifier) -> String? {
        classTypes.lastIndex(of: type).map { classes[$0].name }
    }

    /// The stored class remembered for `type`, if any.
    func storedClass(of type: ObjectIdentifier) -> StoredClass? {
        classTypes.lastIndex(of: type).map { classes[$0] }
    }

    /// Remembers `storedClass` for `type`, forgetting the oldest when full.
    func remember(_ storedClass: StoredClass, for type: ObjectIdentifier) {
        if classes.count == Self.classCapacity {
            classes.removeFirst()
            classTypes.removeFirst()
        }
        classes.append(storedClass)
        classTypes.append(type)
    }

    /// Whether `type` is known to own its name in `database`.
    func isVerified(_ type: ObjectIdentifier, in database: UInt64) -> Bool {
        verified.contains { $0.database == database && $0.type == type }
    }

    /// Remembers that `type` owns its name in `database`.
    func rememberVerified(_ type: ObjectIdentifier, in database: UInt64) {
        if verified.count == Self.classCapacity { verified.removeFirst() }
        verified.append((database, type))
    }
}

import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What encoding and decoding keep per thread between calls: a spare data object, the stored
/// classes of the types they met, and the state of the read or encode under way. With it,
/// reads on a thread that has read before allocate no data object for the records they restore
/// and take no lock for type names.
///
/// Confinement: each thread has its own instance (thread-local storage), used only by
/// synchronous code on that thread, and released when the thread exits. Users take the spare
/// out while they use it, so a nested use on the same thread finds none rather than the same.
/// A read or encode that runs inside another on the same thread (a model's initializer that
/// reads another database) saves and restores the outer one's state.
final class ReadScratch {
    // Exclusivity is not checked at run time on the stored properties: the scratch is used by
    // its own thread only, each access is a plain load or store, and the checks (a call per
    // access, several per read) cost more than the reads of the fields they guarded.

    /// A data object that the last model restored on this thread did not keep.
    @exclusivity(unchecked) var spare: DataObject?
    /// A top `ModelDecoder` that the last `Decodable` model decoded on this thread did not keep
    /// (`ModelDecoder.decode(_:from:dates:)`).
    @exclusivity(unchecked) var spareDecoder: ModelDecoder?
    /// Stored classes by type, most recent last; a few entries, searched linearly. Two arrays
    /// rather than one of pairs, so a search compares identities without copying classes.
    @exclusivity(unchecked) private var classTypes: [ObjectIdentifier] = []
    @exclusivity(unchecked) private var classes: [StoredClass] = []
    private static let classCapacity = 8

    /// The database the current read restores objects from, for resolving nested classes.
    @exclusivity(unchecked) var context: ReadContext?
    /// A database read is restoring objects on this thread (nested objects read outside one,
    /// from `DataObject(rawString:)`, have no read to report a failure to).
    @exclusivity(unchecked) private(set) var isReading = false
    /// The first problem met while restoring the current record's nested objects: the read
    /// throws it once the model's initializer returns (initializers cannot throw).
    @exclusivity(unchecked) var failure: ObjectDecoding.Failure?
    /// Types known to own their stored name in a database, as (database, type); a few entries.
    @exclusivity(unchecked) private var verified: [(database: UInt64, type: ObjectIdentifier)] = []

    /// `Encodable` values being encoded inside one another on this thread (`ModelEncoder.box`).
    @exclusivity(unchecked) var encodingDepth = 0
    /// The nesting level of the container a nested model being encoded on this thread is stored
    /// in (0 outside one): the model's object is one level deeper (`ModelEncoder.dataObject`).
    @exclusivity(unchecked) var encodingLevel = 0

    /// The stored classes met by the encodes under way (kept, emptied, between encodes).
    @exclusivity(unchecked) private var encodedClasses: [StoredClass] = []
    /// How many encodes that collect classes are under way on this thread.
    @exclusivity(unchecked) private var collecting = 0

    /// `Legacy`'s answers on this thread, for the generation of its refactors they hold.
    final class LegacyCache {
        var generation = -1
        var currentNames: [String: String] = [:]
        var allNames: [String: [String]] = [:]
    }

    /// `Legacy`'s answers on this thread.
    let legacy = LegacyCache()

    /// The calling thread's scratch.
    static var current: ReadScratch {
        if let stored = pthread_getspecific(key) {
            return Unmanaged<ReadScratch>.fromOpaque(stored).takeUnretainedValue()
        }
        let scratch = ReadScratch()
        pthread_setspecific(key, Unmanaged.passRetained(scratch).toOpaque())
        return scratch
    }

    /// The record `id` restored as `type` reading `object` in place, with this thread's spare
    /// data object (see `DataObject.restore(_:from:spare:)`); the spare is out of the scratch
    /// meanwhile. A problem restoring a nested object is thrown once the model is built.
    /// - Throws: The nested object's problem; `decodingFailed` when a `Decodable` model's
    ///   decoding throws (`storedName` is the record's class).
    func restore<T: Persistable>(
        _ type: T.Type, from object: EncodedObject, id: @autoclosure () -> String, storedName: @autoclosure () -> String
    ) throws(DatabaseError) -> T {
        var spare = self.spare
        self.spare = nil
        defer { self.spare = spare }
        let restored: T
        do {
            restored = try DataObject.restore(type, from: object, spare: &spare)
        } catch {
            try throwFailure(id: id(), className: storedName())
            throw ModelCoding.decodingError(error, id: id(), className: storedName())
        }
        try throwFailure(id: id(), className: storedName())
        return restored
    }

    /// Runs `body` as one read from the database `context` describes: nested objects resolve
    /// their classes in it, and a problem restoring any of them is thrown after `body`.
    func reading<R>(
        in context: ReadContext?, _ body: () throws(DatabaseError) -> R
    ) throws(DatabaseError) -> R {
        let outer = (self.context, isReading, restoring.database)
        // A failure is only ever pending inside a read, and thrown or dropped before it ends:
        // one left by an outer read on this thread (a model reading from its initializer) is kept.
        let outerFailure = failure.take()
        self.context = context
        isReading = true
        restoring.database = context?.database ?? 0
        defer {
            (self.context, isReading, restoring.database) = outer
            if outerFailure != nil { failure = outerFailure } else if failure != nil { failure = nil }
        }
        return try body()
    }

    /// The engine's mark of the database this thread restores objects from (see `reading`):
    /// this thread's, as the scratch is.
    private let restoring = RestoringThread.current

    /// Throws and clears the failure recorded while restoring the record `id`, stored as `className`.
    func throwFailure(id: @autoclosure () -> String?, className: @autoclosure () -> String = "") throws(DatabaseError) {
        guard let failure else { return }
        self.failure = nil
        throw failure.error(id: id() ?? "", className: className())
    }

    // MARK: Stored classes

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

    // MARK: Encoding

    /// Runs `body`, adding to `classes` the stored class of every data object it creates
    /// (`DataObject(self)`) that `classes` does not hold yet.
    func collectingClasses<R>(into classes: inout [StoredClass], _ body: () -> R) -> R {
        let start = encodedClasses.count
        collecting += 1
        defer {
            collecting -= 1
            encodedClasses.removeSubrange(start...)
        }
        let result = body()
        classes.addAbsent(encodedClasses[start...])
        return result
    }

    /// Notes that a data object of `storedClass` was created, when an encode collects them.
    func noteEncoded(_ storedClass: StoredClass) {
        guard collecting > 0, !encodedClasses.contains(storedClass) else { return }
        encodedClasses.append(storedClass)
    }

    /// The thread-local slot; its destructor releases a thread's scratch when the thread exits.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, releaseScratch)
        return key
    }()
}

#if canImport(Darwin)
private func releaseScratch(_ stored: UnsafeMutableRawPointer) {
    Unmanaged<ReadScratch>.fromOpaque(stored).release()
}
#else
private func releaseScratch(_ stored: UnsafeMutableRawPointer?) {
    if let stored { Unmanaged<ReadScratch>.fromOpaque(stored).release() }
}
#endif

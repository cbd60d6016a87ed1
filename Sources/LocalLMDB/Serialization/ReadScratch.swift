import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// What reads keep per thread between calls: a spare data object and decoder, and the state
/// of the read under way. With it, reads on a thread that has read before allocate no data
/// object for the records they restore.
///
/// Confinement: each thread has its own (`ThreadLocal`), used only by synchronous code on that
/// thread. Users take a spare out while they use it, so a nested use on the same thread finds
/// none rather than the same. A read that runs inside another on the same thread (a model's
/// initializer that reads another database) saves and restores the outer one's state.
final class ReadScratch {
    // Exclusivity is not checked at run time on the stored properties: the scratch is used by
    // its own thread only, each access is a plain load or store, and the checks (a call per
    // access, several per read) cost more than the reads of the fields they guarded.

    /// The calling thread's scratch.
    static var current: ReadScratch {
        @inline(__always) get { scratches.current }
    }

    private static let scratches = ThreadLocal { ReadScratch() }

    /// A data object that the last model restored on this thread did not keep.
    @exclusivity(unchecked) var spare: DataObject?
    /// A top `ModelDecoder` that the last `Decodable` model decoded on this thread did not keep
    /// (`ModelDecoder.decode(_:from:dates:)`).
    @exclusivity(unchecked) var spareDecoder: ModelDecoder?
    /// The database the current read restores objects from, for resolving nested classes.
    @exclusivity(unchecked) var context: ClassLookup?
    /// A database read is restoring objects on this thread (nested objects read outside one,
    /// from `DataObject(rawString:)`, have no read to report a failure to).
    @exclusivity(unchecked) private(set) var isReading = false
    /// The first problem met while restoring the current record's nested objects: the read
    /// throws it once the model's initializer returns (initializers cannot throw).
    @exclusivity(unchecked) var failure: ObjectDecoding.Failure?
    /// This thread's class names, for the classes the read meets.
    let classes = ClassCache.current
    private init() {}

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
    @inline(__always)
    func reading<R>(
        in context: ClassLookup?, _ body: () throws(DatabaseError) -> R
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
}

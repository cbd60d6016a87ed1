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
    /// The references the current read has met, and the models it has built (nil until it
    /// meets one; see `ReadGraph`).
    @exclusivity(unchecked) var graph: ReadGraph?
    /// An empty graph that the last read on this thread to meet references left (taken out
    /// while a read uses it, so a nested read makes its own): reads of references allocate none.
    @exclusivity(unchecked) private var spareGraph: ReadGraph?
    /// The records a read restoring objects after their snapshot ended finds references in:
    /// those its snapshot reached (`ReferencedRecords`); nil for reads in a snapshot.
    @exclusivity(unchecked) var prefetched: ReferencedRecords?
    /// How many records the current read has restored (`restore`), to tell whether it met its
    /// first reference after restoring some (`ReadGraph.missedRecords`).
    @exclusivity(unchecked) var restoredCount = 0
    /// The next reference decoded is an optional property's (`Reference.init(from:)`).
    @exclusivity(unchecked) var decodingOptionalReference = false
    /// The model types whose multi-record reads met references on this thread: their reads
    /// note every record's model from the start (`ReadGraph`).
    @exclusivity(unchecked) var typesMeetingReferences: Set<ObjectIdentifier> = []
    /// This thread's class names, for the classes the read meets.
    let classes = ClassCache.current
    private init() {}

    /// The record `id`, one of the read's own, restored as `type` (see `restoreModel`): counted,
    /// and noted in the read's graph when it has one (references to it get this instance).
    func restore<T: Persistable>(
        _ type: T.Type, from object: EncodedObject, id: @autoclosure () -> String, storedName: @autoclosure () -> String
    ) throws(DatabaseError) -> T {
        let restored = try restoreModel(type, from: object, id: id(), storedName: storedName())
        restoredCount &+= 1
        if let graph { graph.noteRecord(id(), className: storedName(), restored) }
        return restored
    }

    /// The record `id` restored as `type` reading `object` in place, with this thread's spare
    /// data object (see `DataObject.restore(_:from:spare:)`); the spare is out of the scratch
    /// meanwhile. A problem restoring a nested object is thrown once the model is built.
    /// - Throws: The nested object's problem; `decodingFailed` when a `Decodable` model's
    ///   decoding throws (`storedName` is the record's class).
    @inline(__always)
    func restoreModel<T: Persistable>(
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
    ///
    /// References the models meet are resolved before this returns (`ReadGraph.finish`), in the
    /// same snapshot, or among the `prefetched` records for a read whose snapshot has ended.
    /// `notingRecords` starts the read's graph at once, so that every record the read restores is
    /// one instance with the references to it (see `ReadGraph.missedRecords`).
    ///
    /// A read of several records passes their model type as `records`: when its models meet
    /// references only after some records are restored, so that those could not be noted, the
    /// read runs `body` again noting every record (calling `startOver` first), and this thread's
    /// later reads of the type note them from the start.
    ///
    /// `reached`, when given, is told the id of every record the read restored or resolved a
    /// reference to (its own, and those its references reach), once they are all built.
    @inline(__always)
    func reading<R>(
        in context: ClassLookup?, prefetched: ReferencedRecords? = nil, records type: ObjectIdentifier? = nil,
        startOver: () -> Void = {}, reached: ((_ ids: [String]) -> Void)? = nil, _ body: () throws(DatabaseError) -> R
    ) throws(DatabaseError) -> R {
        var notingRecords = type.map(typesMeetingReferences.contains) ?? (reached != nil)
        while true {
            let (result, missed) = try reading(in: context, prefetched: prefetched, notingRecords: notingRecords, reached: reached, body)
            guard missed, let type else { return result }
            typesMeetingReferences.insert(type)
            notingRecords = true
            startOver()
        }
    }

    /// One run of `reading`: its result, and whether the read must run again noting its records
    /// (`ReadGraph.missedRecords`).
    @inline(__always)
    private func reading<R>(
        in context: ClassLookup?, prefetched: ReferencedRecords?, notingRecords: Bool, reached: ((_ ids: [String]) -> Void)?,
        _ body: () throws(DatabaseError) -> R
    ) throws(DatabaseError) -> (R, missed: Bool) {
        let outer = (self.context, isReading, restoring.database)
        let outerGraph = (graph, self.prefetched, restoredCount)
        // A failure is only ever pending inside a read, and thrown or dropped before it ends:
        // one left by an outer read on this thread (a model reading from its initializer) is kept.
        let outerFailure = failure.take()
        self.context = context
        isReading = true
        restoring.database = context?.database ?? 0
        (graph, self.prefetched, restoredCount) = (notingRecords ? takeGraph() : nil, prefetched, 0)
        defer {
            let used = graph
            (self.context, isReading, restoring.database) = outer
            (graph, self.prefetched, restoredCount) = outerGraph
            // Emptied once the read's state is the outer one's: emptying may release models
            // whose deinitializers run code that reads.
            if let used, spareGraph == nil { spareGraph = used.emptied() }
            if outerFailure != nil { failure = outerFailure } else if failure != nil { failure = nil }
        }
        let result = try body()
        guard let graph else { return (result, false) }
        if graph.missedRecords, graph.mayNameMissedRecords { return (result, true) }
        try finish(graph)
        reached?(graph.ids)
        return (result, false)
    }

    /// The room the thread's spare graph holds, for tests: its slots' and waiting boxes'
    /// capacities; nil when it has none.
    var spareGraphRoom: (slots: Int, waiting: Int)? { spareGraph.map(\.room) }

    /// An empty graph for a read: the thread's spare, or a new one.
    @inline(__always)
    func takeGraph() -> ReadGraph {
        guard let spare = spareGraph else { return ReadGraph() }
        spareGraph = nil
        assert(spare.isEmpty, "a spare graph is empty")
        return spare
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

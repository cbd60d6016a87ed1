import LocalLMDBLMDB
import LocalLMDBStore
import LocalLMDBEngine

/// What encodes keep per thread: how deeply `Encodable` values nest, and the stored classes
/// the encodes under way met.
///
/// Confinement: each thread has its own (`ThreadLocal`), used only by synchronous code on it.
final class EncodeScratch {
    /// The calling thread's scratch.
    static var current: EncodeScratch {
        @inline(__always) get { scratches.current }
    }

    private static let scratches = ThreadLocal { EncodeScratch() }

    /// `Encodable` values being encoded inside one another on this thread (`ModelEncoder.box`).
    @exclusivity(unchecked) var encodingDepth = 0
    /// The nesting level of the container a nested model being encoded on this thread is stored
    /// in (0 outside one): the model's object is one level deeper (`ModelEncoder.dataObject`).
    @exclusivity(unchecked) var encodingLevel = 0
    /// The stored classes met by the encodes under way (kept, emptied, between encodes).
    @exclusivity(unchecked) private var encodedClasses: [StoredClass] = []
    /// How many encodes that collect classes are under way on this thread.
    @exclusivity(unchecked) private var collecting = 0
    /// The type whose `KnownMembers` this thread looked up last, and them (`MemberKnowledge`):
    /// a batch of one type looks them up once.
    @exclusivity(unchecked) var lastKnown: (type: ObjectIdentifier, known: KnownMembers?)?

    /// Runs `body`, adding to `classes` the stored class of every data object it creates
    /// (`DataObject(self)`) that `classes` does not hold yet.
    func collectingClasses<R>(into classes: inout ClassList, _ body: () -> R) -> R {
        let start = encodedClasses.count
        collecting += 1
        defer {
            collecting -= 1
            encodedClasses.removeSubrange(start...)
        }
        let result = body()
        classes.add(encodedClasses[start...])
        return result
    }

    /// The models the references of the encodes under way hold, by id, in the order met
    /// (`Reference.encode(to:)`), for the write to store with the record (`RecordEncoding`).
    @exclusivity(unchecked) private var referenced: [(id: String, model: any Persistable)] = []

    /// Notes that the record being encoded refers to `model` as `id`, when an encode collects
    /// classes (a database write); a reference encoded elsewhere (`JSONEncoder`) notes nothing.
    func noteReference(to id: String, model: any Persistable) {
        guard collecting > 0 else { return }
        referenced.append((id, model))
    }

    /// Takes the models noted since `start` (a count of `referencedCount` taken before the
    /// encode that noted them).
    func takeReferences(from start: Int) -> ArraySlice<(id: String, model: any Persistable)> {
        guard start < referenced.count else { return [] }
        let taken = referenced[start...]
        referenced.removeSubrange(start...)
        return taken
    }

    /// How many referenced models are noted (see `takeReferences(from:)`).
    var referencedCount: Int { referenced.count }

    /// Notes that a data object of `storedClass` was created, when an encode collects them.
    func noteEncoded(_ storedClass: StoredClass) {
        guard collecting > 0, !encodedClasses.contains(storedClass) else { return }
        encodedClasses.append(storedClass)
    }
}

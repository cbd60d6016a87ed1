import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// The references one read has met, and the models it has built, by record id: what makes one
/// id one instance within a read, and what lets cycles end.
///
/// A reference decoded while a model is restored is not followed at once: its record is found
/// (in the read's snapshot, or among the records carried out of a transaction), so that a
/// missing one is known while the model is restored, and its box waits in a slot. Once the
/// read's own records are restored, `ReadScratch.finish` builds each waiting record in turn
/// (which may meet more references), without recursion, and fills the boxes: a model refers to
/// one built after it, or before it, or to itself, and every box naming an id gets the one
/// instance the read has of it.
///
/// Invariant: one slot per id (`slot(of:)` finds it); slots before `finished` are built.
///
/// Confinement: belongs to one read on one thread (`ReadScratch.graph`).
final class ReadGraph {
    /// A record the read has met: one of its own (built), or a referenced one.
    struct Slot {
        /// Where a slot's model is: built, or waiting to be built from its record.
        enum Content {
            /// The model; `builder` is the box of a reference that met it while it waited
            /// (filled by `finish`), nil when none did or it is filled.
            case built(any Persistable, builder: ReferenceBox?)
            /// The stored record (valid for the read: in its snapshot, or carried out of it),
            /// which the box of the first reference to it builds as the type it asks for (its
            /// stored class when that is the type or a subclass).
            case waiting(record: DecodedRecord, builder: ReferenceBox)
        }

        let id: String
        /// The class name it is stored under, for errors.
        let className: String
        var content: Content
        /// Boxes of later references that met it before it was built.
        var waiting: [ReferenceBox] = []

        /// The model, once built.
        var instance: (any Persistable)? {
            if case let .built(instance, _) = content { return instance }
            return nil
        }
    }

    private(set) var slots: [Slot]
    /// The fingerprint of each slot's id (`ExactID.fingerprint(of:)`), for `slot(of:)` to scan:
    /// only a slot whose fingerprint matches has its id compared.
    private var fingerprints: [UInt64]
    /// The slot of each id, once there are more than `scanLimit` slots (fewer are found by
    /// scanning fingerprints: cheaper than hashing ids). Ids compare by their bytes: canonically
    /// equivalent ids are two records.
    private var slotIndex: [ExactID: Int] = [:]
    private static let scanLimit = 16
    /// A graph that grew past this many slots is not kept for the thread's next read
    /// (`ReadScratch.spareGraph`): its arrays would hold that memory.
    static let spareLimit = 64
    /// Slots before this one are built and their boxes filled.
    var finished = 0
    /// The read restored some of its records before it met its first reference, so those are
    /// not noted: a reference to one of them would be built as a second instance.
    var missedRecords = false

    /// Room for a parent and its few references without growing.
    init() {
        slots = []
        slots.reserveCapacity(Self.scanLimit)
        fingerprints = []
        fingerprints.reserveCapacity(Self.scanLimit)
    }

    /// Empties the graph for another read, keeping its arrays' room; nil when it grew past
    /// `spareLimit` slots (a new graph costs less than the memory it would hold).
    func emptied() -> ReadGraph? {
        guard slots.count <= Self.spareLimit else { return nil }
        slots.removeAll(keepingCapacity: true)
        fingerprints.removeAll(keepingCapacity: true)
        slotIndex.removeAll(keepingCapacity: true)
        finished = 0
        missedRecords = false
        assert(slots.isEmpty && fingerprints.isEmpty && slotIndex.isEmpty, "an emptied graph holds no slot")
        return self
    }

    /// The slot of `id`, if the read has met it.
    func slot(of id: String) -> Int? {
        guard slots.count > Self.scanLimit else {
            let fingerprint = ExactID.fingerprint(of: id)
            for index in fingerprints.indices where fingerprints[index] == fingerprint && slots[index].id.hasSameUTF8(as: id) {
                return index
            }
            return nil
        }
        return slotIndex[ExactID(id)]
    }

    private func append(_ slot: Slot) {
        slots.append(slot)
        fingerprints.append(ExactID.fingerprint(of: slot.id))
        assert(fingerprints.count == slots.count, "a fingerprint per slot")
        if slots.count > Self.scanLimit {
            if slotIndex.isEmpty {
                slotIndex.reserveCapacity(Self.scanLimit * 4)
                for (index, slot) in slots.enumerated() { slotIndex[ExactID(slot.id)] = index }
            } else {
                slotIndex[ExactID(slot.id)] = slots.count - 1
            }
        }
        assert(slots.count <= Self.scanLimit || slotIndex.count == slots.count, "every slot is indexed")
    }

    /// Adds a slot for a referenced record waiting for `box`.
    func addReferenced(_ id: String, record: DecodedRecord, builder: ReferenceBox) {
        append(Slot(id: id, className: record.className, content: .waiting(record: record, builder: builder)))
    }

    /// Notes one of the read's own records, built as `instance`: references to it (met before
    /// or after) get this instance.
    func noteRecord(_ id: String, className: String, _ instance: any Persistable) {
        if let index = slot(of: id) {
            // A reference met it first: its box gets this instance (`finish`).
            if case let .waiting(_, builder) = slots[index].content { slots[index].content = .built(instance, builder: builder) }
            return
        }
        append(Slot(id: id, className: className, content: .built(instance, builder: nil)))
    }

    /// Adds `box` to the boxes waiting for slot `index`.
    func wait(_ box: ReferenceBox, for index: Int) {
        slots[index].waiting.append(box)
    }

    /// Sets the model of slot `index`, built by its builder (which holds it already).
    func setBuilt(_ instance: any Persistable, at index: Int) {
        slots[index].content = .built(instance, builder: nil)
    }

    /// Takes the boxes waiting for slot `index`.
    func takeWaiting(at index: Int) -> [ReferenceBox] {
        guard !slots[index].waiting.isEmpty else { return [] }
        defer { slots[index].waiting = [] }
        return slots[index].waiting
    }

    /// Whether a waiting reference may name one of the records missed (`missedRecords`): some
    /// slot is neither built nor one of the read's records.
    var mayNameMissedRecords: Bool {
        slots[finished...].contains { $0.instance == nil }
    }
}

/// Thrown by a reference to a missing record when the property holding it is optional: the
/// decoder makes the property nil (`ModelKeyedDecoding.decodeIfPresent`).
struct MissingOptionalReference: Error {}

extension ReadScratch {
    /// What resolving a reference found.
    enum ReferenceLookup {
        /// The box will be filled when the read ends (or has been).
        case resolving
        /// No record has the id.
        case missing
        /// The reference is decoded outside a database read (`JSONDecoder`,
        /// `DataObject(rawString:)`): its box stays empty.
        case unavailable
    }

    /// Notes the reference to `id` whose model goes in `box`: fills it when the read has built
    /// the model, else finds the record and lets the box wait for it (`ReadGraph`).
    func resolveReference(to id: String, box: ReferenceBox) throws(DatabaseError) -> ReferenceLookup {
        guard isReading else { return .unavailable }
        let graph = self.graph ?? startGraph()
        if let index = graph.slot(of: id) {
            if let instance = graph.slots[index].instance {
                guard box.fill(with: instance) else {
                    // Recorded as well as thrown: a model's own code may swallow the throw
                    // (`try?`, `DataObject.get`), and the read must still fail.
                    let failure = ObjectDecoding.Failure.referenceMismatch(
                        referencedID: id, requested: box.requestedName, stored: graph.slots[index].className)
                    if self.failure == nil { self.failure = failure }
                    throw failure.error(id: id)
                }
            } else {
                graph.wait(box, for: index)
            }
            return .resolving
        }
        let record: DecodedRecord?
        if let prefetched {
            if let failure = prefetched.failures[ExactID(id)] { throw failure }
            record = prefetched.records[ExactID(id)]?.stored
        } else if let context, context.readsRecords {
            record = try context.record(id: id)
        } else {
            // A read restoring models after its snapshot ended carries the records their
            // references reach (`ReferencedRecords`); a reference it could not have seen (one a
            // model's initializer decodes from JSON of its own making) cannot be resolved: an
            // error, never a nil.
            let error = DatabaseError.decodingFailed(id: "", className: "", path: "", reason: "the reference to '\(id)' cannot be resolved in this read")
            // Recorded as well as thrown, so that a model's own `try?` cannot make it a nil.
            if failure == nil { failure = .storage(error) }
            throw error
        }
        guard let record else { return .missing }
        graph.addReferenced(id, record: record, builder: box)
        return .resolving
    }

    /// The graph of the read under way, made when it meets its first reference.
    private func startGraph() -> ReadGraph {
        let graph = takeGraph()
        graph.missedRecords = restoredCount > 0
        self.graph = graph
        return graph
    }

    /// Builds every record the read's references wait for, in the order met (building one may
    /// add more), and fills their boxes.
    /// - Throws: What restoring a referenced record throws (naming it); `typeMismatch` naming the
    ///   referenced record when it is not of the type a reference to it asks for.
    func finish(_ graph: ReadGraph) throws(DatabaseError) {
        while graph.finished < graph.slots.count {
            let index = graph.finished
            graph.finished += 1
            let instance: any Persistable
            switch graph.slots[index].content {
            case let .built(built, builder):
                instance = built
                if let builder, !builder.fill(with: built) {
                    throw .typeMismatch(id: graph.slots[index].id, requested: builder.requestedName, stored: graph.slots[index].className)
                }
            case let .waiting(record, builder):
                instance = try builder.build(from: record, id: graph.slots[index].id, scratch: self)
                graph.setBuilt(instance, at: index)
            }
            // Boxes that met the record while it was built wait in the slot too.
            for box in graph.takeWaiting(at: index) where !box.fill(with: instance) {
                throw .typeMismatch(id: graph.slots[index].id, requested: box.requestedName, stored: graph.slots[index].className)
            }
        }
    }
}

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
/// Invariants (asserted in debug builds): one slot per id (`slot(of:fingerprint:)` finds it), and
/// a fingerprint per slot; a slot has a model or a record to build it from, never both; slots
/// before `finished` are built. Building and filling move a slot's fields in place: a slot is
/// never copied.
///
/// Confinement: belongs to one read on one thread (`ReadScratch.graph`); each access is a
/// plain load or store, so exclusivity is not checked at run time.
final class ReadGraph {
    /// A record the read has met: one of its own (built), or a referenced one.
    struct Slot {
        let id: String
        /// The class name its record is stored under, for errors.
        let className: String
        /// Its model once built; nil while it waits.
        var model: (any Persistable)?
        /// The stored record a waiting slot is built from (valid for the read: in its snapshot,
        /// or carried out of it); nil once built, and for the read's own records.
        var record: DecodedRecord?
        /// The box of the first reference to meet it: it builds a waiting record as the type it
        /// asks for (its stored class when that is the type or a subclass), or, when the read
        /// restored the record itself, `finish` fills it. Nil when no reference met the slot
        /// first, and once used.
        var builder: ReferenceBox?
        /// The first and last of the boxes that met it before it was built, in `waiting`
        /// (linked by `next`); nil when none did.
        var firstWaiting: Int?
        var lastWaiting: Int?
    }

    /// A box that met a slot before the slot was built, and the next box that met the same slot.
    struct WaitingBox {
        let box: ReferenceBox
        var next: Int?
    }

    /// The slots, in the order met.
    @exclusivity(unchecked) private(set) var slots: [Slot]
    /// The fingerprint of each slot's id (`ExactID.fingerprint(of:)`), for `slot(of:)` to scan:
    /// only a slot whose fingerprint matches has its id compared.
    @exclusivity(unchecked) private var fingerprints: [UInt64]
    /// Boxes of later references that met a slot before it was built, one list for all slots
    /// (each slot's linked from its `firstWaiting`): `finish` fills a slot's as soon as it is
    /// built, in the order they met it. Emptied with the graph.
    @exclusivity(unchecked) private var waiting: [WaitingBox] = []
    /// The slot of each id, once there are more than `scanLimit` slots (fewer are found by
    /// scanning fingerprints: cheaper than hashing ids). Ids compare by their bytes: canonically
    /// equivalent ids are two records.
    @exclusivity(unchecked) private var slotIndex: [ExactID: Int] = [:]
    private static let scanLimit = 16
    /// A graph that grew past this many slots is not kept for the thread's next read
    /// (`ReadScratch.spareGraph`): its arrays would hold that memory.
    static let spareLimit = 64
    /// Slots before this one are built.
    @exclusivity(unchecked) var finished = 0
    /// The read restored some of its records before it met its first reference, so those are
    /// not noted: a reference to one of them would be built as a second instance.
    @exclusivity(unchecked) var missedRecords = false

    /// Room for a parent and its few references without growing.
    init() {
        slots = []
        slots.reserveCapacity(Self.scanLimit)
        fingerprints = []
        fingerprints.reserveCapacity(Self.scanLimit)
    }

    /// The capacities of the slots and of the waiting boxes: what an emptied graph holds.
    var room: (slots: Int, waiting: Int) { (slots.capacity, waiting.capacity) }

    /// How many records the read has met.
    var count: Int { slots.count }

    /// The ids of the records the read has met, in the order met.
    var ids: [String] { slots.map(\.id) }

    /// Whether the graph holds nothing: as made, or emptied.
    var isEmpty: Bool { slots.isEmpty && fingerprints.isEmpty && waiting.isEmpty && finished == 0 && !missedRecords }

    /// Empties the graph for another read, keeping its arrays' room; nil when it grew past
    /// `spareLimit` slots (a new graph costs less than the memory it would hold).
    func emptied() -> ReadGraph? {
        // The waiting boxes count too: a few records with many references to them (100,000
        // references to 3 owners) would otherwise leave a large list held by the thread.
        guard slots.count <= Self.spareLimit, waiting.capacity <= Self.spareLimit else { return nil }
        // One at a time: `removeAll(keepingCapacity:)` goes through an unspecialized
        // `replaceSubrange`, several times the cost for a few elements.
        while slots.popLast() != nil {}
        while fingerprints.popLast() != nil {}
        while waiting.popLast() != nil {}
        if !slotIndex.isEmpty { slotIndex.removeAll(keepingCapacity: true) }
        finished = 0
        missedRecords = false
        assert(isEmpty && slotIndex.isEmpty, "an emptied graph holds no slot")
        return self
    }

    /// The slot of `id`, whose fingerprint is `fingerprint`, if the read has met it.
    func slot(of id: String, fingerprint: UInt64) -> Int? {
        assert(fingerprint == ExactID.fingerprint(of: id), "the fingerprint is the id's")
        guard slots.count > Self.scanLimit else {
            for index in fingerprints.indices where fingerprints[index] == fingerprint && slots[index].id.hasSameUTF8(as: id) {
                return index
            }
            return nil
        }
        return slotIndex[ExactID(id)]
    }

    private func append(_ slot: Slot, fingerprint: UInt64) {
        slots.append(slot)
        fingerprints.append(fingerprint)
        if slots.count > Self.scanLimit {
            if slotIndex.isEmpty {
                slotIndex.reserveCapacity(Self.scanLimit * 4)
                for (index, slot) in slots.enumerated() { slotIndex[ExactID(slot.id)] = index }
            } else {
                slotIndex[ExactID(slot.id)] = slots.count - 1
            }
        }
        assert(fingerprints.count == slots.count, "a fingerprint per slot")
        assert(slots.count <= Self.scanLimit || slotIndex.count == slots.count, "every slot is indexed")
        assert((slot.model == nil) != (slot.record == nil), "a slot has a model or a record to build it from")
    }

    /// Adds a slot for the referenced record `id` (whose fingerprint is `fingerprint`), waiting
    /// for `builder` to build it.
    func addReferenced(_ id: String, fingerprint: UInt64, record: DecodedRecord, builder: ReferenceBox) {
        append(Slot(id: id, className: record.className, model: nil, record: record, builder: builder), fingerprint: fingerprint)
    }

    /// Notes one of the read's own records, built as `instance`: references to it (met before
    /// or after) get this instance.
    func noteRecord(_ id: String, className: String, _ instance: any Persistable) {
        let fingerprint = ExactID.fingerprint(of: id)
        if let index = slot(of: id, fingerprint: fingerprint) {
            // A reference met it first: its builder gets this instance (`finish`), and the
            // record is not built.
            if slots[index].model == nil { (slots[index].model, slots[index].record) = (instance, nil) }
            return
        }
        append(Slot(id: id, className: className, model: instance, record: nil, builder: nil), fingerprint: fingerprint)
    }

    /// Adds `box` to the boxes waiting for slot `index`, which is not built yet.
    func wait(_ box: ReferenceBox, for index: Int) {
        assert(slots[index].model == nil, "a box waits only for a slot not built")
        waiting.append(WaitingBox(box: box, next: nil))
        let added = waiting.count - 1
        if let last = slots[index].lastWaiting { waiting[last].next = added } else { slots[index].firstWaiting = added }
        slots[index].lastWaiting = added
    }

    /// What `finish` does for slot `index`: takes its record and builder when it waits (the
    /// builder then builds it), or its builder alone when it is built (the builder is filled).
    func takeWork(at index: Int) -> (record: DecodedRecord?, builder: ReferenceBox?) {
        let work = (slots[index].record.take(), slots[index].builder.take())
        assert(work.0 == nil || work.1 != nil, "a waiting record has its builder")
        return work
    }

    /// Sets the model of slot `index`, built by its builder (which holds it already).
    func setBuilt(_ instance: any Persistable, at index: Int) {
        assert(slots[index].model == nil && slots[index].record == nil, "a slot is built once")
        slots[index].model = instance
    }

    /// Fills the boxes that met slot `index` before it was built, in the order they met it.
    /// - Throws: `typeMismatch` naming the slot's record when it is not of the type a box asks for.
    func fillWaiting(at index: Int) throws(DatabaseError) {
        guard var next = slots[index].firstWaiting else { return }
        let model = slots[index].model
        assert(model != nil, "a slot's waiting boxes are filled once it is built")
        guard let model else { return }
        slots[index].firstWaiting = nil
        slots[index].lastWaiting = nil
        while true {
            let waiter = waiting[next]
            if !waiter.box.fill(with: model) {
                throw .typeMismatch(id: slots[index].id, requested: waiter.box.requestedName, stored: slots[index].className)
            }
            guard let following = waiter.next else { return }
            next = following
        }
    }

    /// Whether a waiting reference may name one of the records missed (`missedRecords`): some
    /// slot is neither built nor one of the read's records.
    var mayNameMissedRecords: Bool {
        slots[finished...].contains { $0.model == nil }
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
        let fingerprint = ExactID.fingerprint(of: id)
        if let index = graph.slot(of: id, fingerprint: fingerprint) {
            if let instance = graph.slots[index].model {
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
        graph.addReferenced(id, fingerprint: fingerprint, record: record, builder: box)
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
        while graph.finished < graph.count {
            let index = graph.finished
            graph.finished += 1
            switch graph.takeWork(at: index) {
            case let (record?, builder?):
                graph.setBuilt(try builder.build(from: record, id: graph.slots[index].id, scratch: self), at: index)
            case let (nil, builder?):
                // One of the read's own records, met by a reference before it was restored.
                if let built = graph.slots[index].model, !builder.fill(with: built) {
                    throw .typeMismatch(id: graph.slots[index].id, requested: builder.requestedName, stored: graph.slots[index].className)
                }
            case (_, nil):
                assert(graph.slots[index].model != nil, "a slot without a builder is one of the read's own records")
            }
            // Boxes that met the record before it was built, and those that met it while it was.
            try graph.fillWaiting(at: index)
        }
    }
}

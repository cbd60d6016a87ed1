import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore

/// Which top-level members of a stored document each model type reads: learned once per type
/// and process, and carried with the records the type writes (`KnownMembers`), so that a
/// synchronized database keeps the fields a model does not know when it replaces a document
/// (see <doc:SyncingDevices>).
///
/// A type's members are learned by restoring it, with a `MemberProbe`, from a document it has
/// just encoded: every member its `init(from:)` or `init(dataObject:)` looks up (`decode`,
/// `decodeIfPresent`, `contains`, `get`, legacy keys included) is one it knows, whether the
/// document holds it or not. A type that reads every member (`allKeys`, `rawData`,
/// `toRawString()`), or that cannot restore itself from its own document, writes whole
/// documents: it knows every member.
enum MemberKnowledge {
    /// What each type was found to know; `.some(nil)`: every member.
    private static let learned = Locked<[ObjectIdentifier: KnownMembers?]>([:])

    /// The members `T` reads, learned from `fields` (`model`'s stored fields) the first time;
    /// nil when `T` knows every member.
    static func members<T: Persistable>(of type: T.Type, fields: DataObject, scratch: EncodeScratch) -> KnownMembers? {
        let id = ObjectIdentifier(type)
        if let last = scratch.lastKnown, last.type == id { return last.known }
        let known: KnownMembers?
        if let learnedBefore = learned.withLock({ $0[id] }) {
            known = learnedBefore
        } else {
            let learnedNow = learn(type, from: fields)
            // Two threads may learn a type at once: the first answer stays, so a batch holds one.
            known = learned.withLock { learned in
                if let first = learned[id] { return first }
                learned[id] = learnedNow
                return learnedNow
            }
        }
        scratch.lastKnown = (id, known)
        return known
    }

    /// `type` (the model's own type, a subclass's included) restored from a copy of `fields`'
    /// document, noting the members it looks up; with the members the document holds (a member
    /// the model writes and never reads is its own too). Nil (every member) when the restore
    /// throws, reads every member, or looks up none (a model that keeps its data object and
    /// reads it later: what it reads is not known).
    private static func learn<T: Persistable>(_ type: T.Type, from fields: DataObject) -> KnownMembers? {
        guard let bytes = fields.encoded() else { return nil }
        return bytes.withUnsafeBytes { document -> KnownMembers? in
            let copy = JSONBuffer(copying: document)
            let encoded = EncodedObject(bytes: UnsafeRawBufferPointer(copy.bytes), owner: copy)
            let object = DataObject(encoded: encoded)
            let probe = MemberProbe()
            object.probe = probe
            // A model that keeps its data object must not go on noting into the probe.
            defer { object.probe = nil }
            // The restore is the model's own code: whatever it does, it learns or it does not.
            guard (try? type._restore(from: object)) != nil, !probe.readsEveryMember, !probe.names.isEmpty else { return nil }
            return KnownMembers(probe.names.union(EncodedObject.memberNames(of: encoded.extent)))
        }
    }
}

/// The member names a restore looked up (as stored: `FieldKey.stored`), or that it read every
/// member. Used on one thread, during one restore.
final class MemberProbe {
    private(set) var names: Set<String> = []
    private(set) var readsEveryMember = false

    /// Notes the field `key` and its legacy keys. (Never inlined: the readers that call it
    /// are, and a probe is rare.)
    @inline(never)
    func note(_ key: String, _ legacyKeys: [String]) {
        names.insert(FieldKey.stored(key))
        for legacyKey in legacyKeys { names.insert(FieldKey.stored(legacyKey)) }
    }

    /// Notes a member name as stored.
    @inline(never)
    func note(_ storedName: String) {
        names.insert(storedName)
    }

    /// Notes that the restore read the whole object.
    func noteEveryMember() {
        readsEveryMember = true
    }
}

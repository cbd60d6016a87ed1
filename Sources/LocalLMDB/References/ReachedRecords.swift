import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// The ids of the record `id`, read as `T`, and of every record its references reach: what a
/// cascading delete may delete (`LocalDatabase.delete(_:id:includingReferenced:)`). Nil when
/// there is no record `id`.
///
/// Found by restoring the models, so only what the models' types read as references counts (a
/// dictionary that happens to hold a `"$ref"` key does not).
struct ReadReachedIDs<T: Persistable>: SessionRead {
    let byID: ReadByID<T>

    func inTransaction<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> ReadByID<T>.Detached {
        try byID.inTransaction(snapshot)
    }

    func restore(_ detached: ReadByID<T>.Detached, classes: ClassLookup) throws(DatabaseError) -> [String]? {
        guard let detached else { return nil }
        var ids: [String] = []
        _ = try detached.record.stored.instantiate(as: T.self, context: classes, prefetched: detached.referenced) { ids = $0 }
        return ids
    }

    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> [String]? {
        guard let record = try snapshot.record(byID.key, id: byID.id) else { return nil }
        var ids: [String] = []
        _ = try record.instantiate(as: T.self, context: snapshot.classes) { ids = $0 }
        return ids
    }
}

/// Whether the record `id` is there, stored as `T` or a subclass of it: what a delete of a `T`
/// checks first (without decoding the record).
/// - Throws: `typeMismatch` when it is stored as another class; what resolving its class throws.
struct ReadStoredType<T: Persistable>: PlainRead {
    let byID: ReadByID<T>

    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> Bool {
        guard let record = try snapshot.record(byID.key, id: byID.id) else { return false }
        switch ObjectDecoding.resolve(storedName: record.className, requested: T.self, context: snapshot.classes, scratch: .current) {
        case .requested:
            return true
        case let .stored(stored):
            guard stored is T.Type else {
                throw .typeMismatch(id: byID.id, requested: TypeRegistry.name(of: T.self), stored: record.className)
            }
            return true
        case let .failure(failure):
            throw failure.error(id: byID.id, className: record.className)
        }
    }
}

/// The operation of a cascading delete of `id`, whose reached ids `reached` gave: the store
/// deletes the record and follows, in its transaction, only references to those ids.
func deleteReaching(_ id: String, reached: [String], maxKeySize: Int) throws(DatabaseError) -> WriteOperation {
    .deleteReaching(try RecordEncoding.recordKey(id, maxKeySize: maxKeySize), following: Set(reached.map(ExactID.init)))
}

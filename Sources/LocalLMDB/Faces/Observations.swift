import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// An observed id's read: a record of another class under the id is no `T`, so the observation
/// yields nil, as when there is none, and goes on (a `T` written there later is seen). A read by
/// id throws `typeMismatch` there instead: it asked for a `T` that is not there. A mismatch of
/// another record (one the observed record refers to) is an error of the observation.
///
/// Its digest is that of the record's class name and stored document (a fixed one when there is
/// none), so a commit that may have changed the record but left its bytes as they were (the
/// deletion of a whole class, which names no ids; a write of the same bytes) gives no value again.
struct ObservedReadByID<T: Persistable>: SnapshotRead {
    let read: ReadByID<T>

    /// The digest of no record under the id.
    static var absent: UInt64 { 0 }

    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> Observed<T?> {
        guard let record = try snapshot.record(read.key, id: read.id) else { return Observed(value: nil, digest: Self.absent) }
        var className = record.className
        var digest = className.withUTF8 { RecordChecksum.of(UnsafeRawBufferPointer($0)) }
        digest = RecordChecksum.of(record.object.extent, after: digest)
        do {
            return Observed(value: try record.instantiate(as: T.self, context: snapshot.classes), digest: digest)
        } catch {
            if case let .typeMismatch(id, _, _) = error, ExactID(id) == ExactID(read.id) { return Observed(value: nil, digest: digest) }
            throw error
        }
    }
}

/// The observations both faces make.
enum Observations {
    static func object<T: Persistable>(_ type: T.Type, id: String, source: Result<FaceEngine, DatabaseError>) -> DatabaseObservation<T?> {
        let read = source.flatMap { engine in
            Result { () throws(DatabaseError) -> any SnapshotRead<Observed<T?>> in
                ObservedReadByID(read: try ReadByID<T>(id, maxKeySize: engine.maxKeySize))
            }
        }
        return DatabaseObservation(source: source, read: read, isRelevant: { $0.concerns(id: id) })
    }

    static func all<T: Persistable>(_ type: T.Type, source: Result<FaceEngine, DatabaseError>) -> DatabaseObservation<[T]> {
        let classNames = RecordEncoding.classNames(type)
        let read = source.map { engine -> any SnapshotRead<Observed<[T]>> in EveryValue(read: ReadAll<T>(maxKeySize: engine.maxKeySize)) }
        return DatabaseObservation(source: source, read: read, isRelevant: { $0.concerns(classNames: classNames) })
    }

    /// A query's results, given again only when a commit changed them (the records selected,
    /// their order, or their stored bytes).
    static func query<T: Persistable>(_ query: Query<T>, source: Result<FaceEngine, DatabaseError>) -> DatabaseObservation<[T]> {
        let classNames = RecordEncoding.classNames(T.self)
        let read = Result { () throws(DatabaseError) -> any SnapshotRead<Observed<[T]>> in
            ObservedQuery<T>(read: ReadQuery(try QueryPlan.plan(query)))
        }
        return DatabaseObservation(source: source, read: read, isRelevant: { $0.concerns(classNames: classNames) })
    }
}

/// A query's results with a digest of the records they were read from: their keys and stored
/// bytes, in order.
struct ObservedQuery<T: Persistable>: SnapshotRead {
    let read: ReadQuery<T>

    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> Observed<[T]> {
        var digest: UInt64 = 0
        let (value, _) = try read.models(in: snapshot, visit: { stored, id in
            var recordID = id
            digest = recordID.withUTF8 { RecordChecksum.of(UnsafeRawBufferPointer($0), after: digest) }
            digest = RecordChecksum.of(stored.object.extent, after: digest)
        }, startOver: { digest = 0 })
        return Observed(value: value, digest: digest)
    }
}

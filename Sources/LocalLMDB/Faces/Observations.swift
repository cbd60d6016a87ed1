import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// An observed id's read: a record of another class under the id is no `T`, so the observation
/// yields nil, as when there is none, and goes on (a `T` written there later is seen). A read by
/// id throws `typeMismatch` there instead: it asked for a `T` that is not there.
struct ObservedReadByID<T: Persistable>: SnapshotRead {
    let read: ReadByID<T>

    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> T? {
        do {
            return try read.snapshot(snapshot)
        } catch {
            if case .typeMismatch = error { return nil }
            throw error
        }
    }
}

/// The observations both faces make.
enum Observations {
    static func object<T: Persistable>(_ type: T.Type, id: String, source: Result<FaceEngine, DatabaseError>) -> DatabaseObservation<T?> {
        let read = source.flatMap { engine in
            Result { () throws(DatabaseError) -> any SnapshotRead<T?> in ObservedReadByID(read: try ReadByID<T>(id, maxKeySize: engine.maxKeySize)) }
        }
        return DatabaseObservation(source: source, read: read, isRelevant: { $0.concerns(id: id) })
    }

    static func all<T: Persistable>(_ type: T.Type, source: Result<FaceEngine, DatabaseError>) -> DatabaseObservation<[T]> {
        let classNames = RecordEncoding.classNames(type)
        let read = source.map { engine -> any SnapshotRead<[T]> in ReadAll<T>(maxKeySize: engine.maxKeySize) }
        return DatabaseObservation(source: source, read: read, isRelevant: { $0.concerns(classNames: classNames) })
    }
}

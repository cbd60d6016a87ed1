// Change feeds and observation on the synchronous face (see LocalDatabase+Changes.swift).
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

extension SerializationDatabase {
    /// The position after the last commit; nil on failure (`lastError` says why).
    public func changeToken() -> ChangeToken? {
        run(nil) { engine throws(DatabaseError) in ChangeToken(try engine.changeToken()) }
    }

    /// Every commit after `token` and the token to ask from next time; nil on failure, such as
    /// `LocalDatabaseError.changesUnavailable` in `lastError` (see `LocalDatabase.changes(since:)`).
    public func changes(since token: ChangeToken) -> ChangeFeed? {
        run(nil) { engine throws(DatabaseError) in ChangeFeed(try engine.changeFeedBlocking(since: token.position)) }
    }

    /// The commits made from now on (see `LocalDatabase.changes()`). Iterating throws the
    /// error when the database could not be opened.
    public func changes() -> ChangeSequence {
        ChangeSequence(source: opened, start: opened.flatMap { engine in Result { () throws(DatabaseError) in try engine.changeToken() } }, classNames: nil)
    }

    /// The commits made from now on that changed records stored as `T` (see
    /// `LocalDatabase.changes(of:)`).
    public func changes<T: Persistable>(of type: T.Type) -> ChangeSequence {
        ChangeSequence(
            source: opened, start: opened.flatMap { engine in Result { () throws(DatabaseError) in try engine.changeToken() } },
            classNames: RecordEncoding.classNames(type))
    }

    /// The object stored under `id`, then again after each commit that changed it (see
    /// `LocalDatabase.observe(_:id:)`).
    public func observe<T: Persistable>(_ type: T.Type, id: String) -> DatabaseObservation<T?> {
        Observations.object(type, id: id, source: opened)
    }

    /// Every object stored as `T`, then again after each commit that changed them (see
    /// `LocalDatabase.observeAll(_:)`).
    public func observeAll<T: Persistable>(_ type: T.Type) -> DatabaseObservation<[T]> {
        Observations.all(type, source: opened)
    }

    /// The records `query` selects, then again after each commit that changed them (see
    /// `LocalDatabase.observe(_:)`).
    public func observe<T: Persistable>(_ query: Query<T>) -> DatabaseObservation<[T]> {
        Observations.query(query, source: opened)
    }
}

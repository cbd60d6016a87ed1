// Change feeds and observation on the actor face. Every commit records what it changed in the
// database's change log (`ChangeLog`), in the commit itself; these read it.
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

extension LocalDatabase {
    /// The position after the last commit: keep it, and ask `changes(since:)` for what comes
    /// after, now or after a restart.
    /// - Throws: `LocalDatabaseError.closed`, `.storage`.
    public nonisolated func changeToken() throws -> ChangeToken {
        do throws(DatabaseError) {
            return ChangeToken(try engine.changeToken())
        } catch { throw LocalDatabaseError(error) }
    }

    /// Every commit after `token`, oldest first, and the token to ask from next time: for
    /// pushing local changes to a server, resuming where the last sync stopped.
    ///
    /// ```swift
    /// let feed = try database.changes(since: lastSynced)
    /// for commit in feed.commits { try await upload(commit.changes) }
    /// lastSynced = feed.token
    /// ```
    /// - Throws: `LocalDatabaseError.changesUnavailable` when the log no longer holds the
    ///   changes after `token` (it keeps `DatabaseConfiguration.changeLogCommits` commits) or
    ///   `token` belongs to another database: resynchronize from the current state then.
    public nonisolated func changes(since token: ChangeToken) throws -> ChangeFeed {
        do throws(DatabaseError) {
            return ChangeFeed(try engine.changeFeedBlocking(since: token.position))
        } catch { throw LocalDatabaseError(error) }
    }

    /// The commits made from now on, each once, in order, as they become durable (see
    /// `ChangeSequence`).
    public nonisolated func changes() -> ChangeSequence {
        ChangeSequence(source: .success(engine), start: Result { () throws(DatabaseError) in try engine.changeToken() }, classNames: nil)
    }

    /// `changes()` of the records stored under `classNames` (exactly those names; every change
    /// when nil), for `localdb watch`, which knows no model types.
    package nonisolated func changes(ofClassNames classNames: [String]?) -> ChangeSequence {
        ChangeSequence(source: .success(engine), start: Result { () throws(DatabaseError) in try engine.changeToken() }, classNames: classNames)
    }

    /// For engines whose change token is read asynchronously (a server's): `changes()` and
    /// `changes(of:)` from `position` on.
    package nonisolated func changes(after position: LogPosition, classNamesOf type: (any Persistable.Type)?) -> ChangeSequence {
        ChangeSequence(source: .success(engine), start: .success(position), classNames: type.map { RecordEncoding.classNames($0) })
    }

    /// For engines whose reads wait (a server's): `changes(since:)`, suspending rather than blocking.
    package nonisolated(nonsending) func changesAsync(since token: ChangeToken) async throws(DatabaseError) -> ChangeFeed {
        ChangeFeed(try await engine.changeFeed(since: token.position, limit: .max))
    }

    /// The commits made from now on that changed records stored as `T` (under its current or
    /// a legacy class name), with only those changes (see `ChangeSequence`).
    public nonisolated func changes<T: Persistable>(of type: T.Type) -> ChangeSequence {
        ChangeSequence(
            source: .success(engine), start: Result { () throws(DatabaseError) in try engine.changeToken() },
            classNames: RecordEncoding.classNames(type))
    }

    /// The object stored under `id`, then again after each commit that changed its stored bytes
    /// (nil while there is none); see `DatabaseObservation`.
    ///
    /// ```swift
    /// for try await person in database.observe(Person.self, id: "ada") { show(person) }
    /// ```
    public nonisolated func observe<T: Persistable>(_ type: T.Type, id: String) -> DatabaseObservation<T?> {
        Observations.object(type, id: id, source: .success(engine))
    }

    /// Every object stored as `T`, then again after each commit that changed records of `T`
    /// (in the order of `read()`); see `DatabaseObservation`.
    public nonisolated func observeAll<T: Persistable>(_ type: T.Type) -> DatabaseObservation<[T]> {
        Observations.all(type, source: .success(engine))
    }

    /// The records `query` selects, then again after each commit (of any process or database
    /// value) that changed them: the records selected, their order, or their contents. See
    /// `DatabaseObservation`.
    ///
    /// ```swift
    /// for try await page in database.observe(Query(Order.self).filter("status", .equals("open")).limit(20)) { show(page) }
    /// ```
    public nonisolated func observe<T: Persistable>(_ query: Query<T>) -> DatabaseObservation<[T]> {
        Observations.query(query, source: .success(engine))
    }
}

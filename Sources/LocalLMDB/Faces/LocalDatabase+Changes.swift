// Change feeds and observation, on both faces. Every commit records what it changed in the
// database's change log (`ChangeLog`), in the commit itself; these read it.

extension LocalDatabase {
    /// The position after the last commit: keep it, and ask `changes(since:)` for what comes
    /// after, now or after a restart.
    /// - Throws: `LocalDatabaseError.closed`, `.storage`.
    public nonisolated func changeToken() throws -> ChangeToken {
        try session.changeToken()
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
        try session.changeFeed(since: token)
    }

    /// The commits made from now on, each once, in order, as they become durable (see
    /// `ChangeSequence`).
    public nonisolated func changes() -> ChangeSequence {
        ChangeSequence(source: .success(session), start: Result { () throws(LocalDatabaseError) in try session.changeToken() }, classNames: nil)
    }

    /// The commits made from now on that changed records stored as `T` (under its current or
    /// a legacy class name), with only those changes (see `ChangeSequence`).
    public nonisolated func changes<T: Persistable>(of type: T.Type) -> ChangeSequence {
        ChangeSequence(
            source: .success(session), start: Result { () throws(LocalDatabaseError) in try session.changeToken() },
            classNames: RecordEncoding.classNames(type))
    }

    /// The object stored under `id`, then again after each commit that wrote or deleted it
    /// (nil while there is none); see `DatabaseObservation`.
    ///
    /// ```swift
    /// for try await person in database.observe(Person.self, id: "ada") { show(person) }
    /// ```
    public nonisolated func observe<T: Persistable>(_ type: T.Type, id: String) -> DatabaseObservation<T?> {
        Observations.object(type, id: id, source: .success(session))
    }

    /// Every object stored as `T`, then again after each commit that changed records of `T`
    /// (in the order of `read()`); see `DatabaseObservation`.
    public nonisolated func observeAll<T: Persistable>(_ type: T.Type) -> DatabaseObservation<[T]> {
        Observations.all(type, source: .success(session))
    }
}

extension SerializationDatabase {
    /// The position after the last commit; nil on failure (`lastError` says why).
    public func changeToken() -> ChangeToken? {
        run(nil) { session throws(LocalDatabaseError) in try session.changeToken() }
    }

    /// Every commit after `token` and the token to ask from next time; nil on failure, such as
    /// `LocalDatabaseError.changesUnavailable` in `lastError` (see `LocalDatabase.changes(since:)`).
    public func changes(since token: ChangeToken) -> ChangeFeed? {
        run(nil) { session throws(LocalDatabaseError) in try session.changeFeed(since: token) }
    }

    /// The commits made from now on (see `LocalDatabase.changes()`). Iterating throws the
    /// error when the database could not be opened.
    public func changes() -> ChangeSequence {
        ChangeSequence(source: opened, start: opened.flatMap { session in Result { () throws(LocalDatabaseError) in try session.changeToken() } }, classNames: nil)
    }

    /// The commits made from now on that changed records stored as `T` (see
    /// `LocalDatabase.changes(of:)`).
    public func changes<T: Persistable>(of type: T.Type) -> ChangeSequence {
        ChangeSequence(
            source: opened, start: opened.flatMap { session in Result { () throws(LocalDatabaseError) in try session.changeToken() } },
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
}

/// An observed id's read: a record of another class under the id is no `T`, so the observation
/// yields nil, as when there is none, and goes on (a `T` written there later is seen). A read by
/// id throws `typeMismatch` there instead: it asked for a `T` that is not there.
struct ObservedReadByID<T: Persistable>: SnapshotRead {
    let read: ReadByID<T>

    func snapshot(_ transaction: Transaction) throws(LocalDatabaseError) -> T? {
        do {
            return try read.snapshot(transaction)
        } catch {
            if case .typeMismatch = error { return nil }
            throw error
        }
    }
}

/// The observations both faces make.
enum Observations {
    static func object<T: Persistable>(_ type: T.Type, id: String, source: Result<Session, LocalDatabaseError>) -> DatabaseObservation<T?> {
        let read = source.flatMap { session in
            Result { () throws(LocalDatabaseError) -> any SnapshotRead<T?> in ObservedReadByID(read: try ReadByID<T>(id, in: session.engine)) }
        }
        return DatabaseObservation(source: source, read: read, isRelevant: { $0.concerns(id: id) })
    }

    static func all<T: Persistable>(_ type: T.Type, source: Result<Session, LocalDatabaseError>) -> DatabaseObservation<[T]> {
        let classNames = RecordEncoding.classNames(type)
        let read = source.map { session -> any SnapshotRead<[T]> in ReadAll<T>(in: session.engine) }
        return DatabaseObservation(source: source, read: read, isRelevant: { $0.concerns(classNames: classNames) })
    }
}

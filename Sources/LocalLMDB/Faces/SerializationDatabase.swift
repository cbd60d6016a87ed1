import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// A persistent store of `Storable` objects with SwiftSerialization's synchronous API, on the
/// same engine as `LocalDatabase`.
///
/// ```swift
/// let database = SerializationDatabase()
/// database.write(Record(id: "andre", data: person))     // true once stored
/// let person: Person? = database.read(id: "andre")
/// ```
///
/// Methods block the calling thread until done and never throw: a failure returns the
/// method's failure value (`false`, `nil`, `0`, `[]`) and is kept in `lastError`. Safe from any
/// number of threads at once; a transaction belongs to the database, not to a thread, so it may
/// be started on one thread, written from others and committed from yet another.
///
/// What blocks: writes wait for their durable commit (group-committed with concurrent writes,
/// as in `LocalDatabase`), and for another database's transaction on the same directory for at
/// most `busyTimeout`. Reads outside a transaction run on the calling thread and never wait for
/// writers. Avoid calling it from Swift concurrency's cooperative threads for long waits;
/// `LocalDatabase` is the `async` face of the same engine.
///
/// A call that would wait for itself fails at once with `LocalDatabaseError.wouldDeadlock`:
/// one made on the database's writer thread, or from a model's `init(dataObject:)` while a read
/// of the same database is restoring it.
///
/// `LocalDatabase` and `SerializationDatabase` values on one directory share one environment
/// and the same transaction rules.
public final class SerializationDatabase: DatabaseTarget, Sendable {
    /// The engine, or why the database could not be opened (`init()`).
    let opened: Result<FaceEngine, DatabaseError>
    private let lastFailure = Locked<DatabaseError?>(nil)

    /// Opens the default database (`LocalDatabase.defaultDirectory`, shared with
    /// `LocalDatabase()`), without throwing: if it cannot be opened, every call returns its
    /// failure value and `lastError` says why.
    public init() {
        opened = Result { () throws(DatabaseError) in
            FaceEngine.lmdb(try Session(directory: LocalDatabase.defaultDirectory, configuration: DatabaseConfiguration().engine))
        }
        if case let .failure(error) = opened { lastFailure.withLock { $0 = error } }
    }

    /// Opens (creating if needed, unless read-only) the database in `directory`.
    /// - Throws: `LocalDatabaseError.invalidDirectory`, `.incompatibleOptions`,
    ///   `.unsupportedFormat` or `.storage`.
    public init(directory: URL, configuration: DatabaseConfiguration = DatabaseConfiguration()) throws {
        do throws(DatabaseError) {
            opened = .success(.lmdb(try Session(directory: directory, configuration: configuration.engine)))
        } catch { throw LocalDatabaseError(error) }
    }

    /// A database on another engine than LMDB's: the seam's other side (`EngineWriter`).
    package init(engine: any EngineWriter) {
        opened = .success(.other(engine))
    }

    deinit {
        if case let .success(engine) = opened { engine.closeWhenDropped() }
    }

    /// The error of the most recent call that failed (on any thread), or of opening. A later
    /// success does not clear it.
    public var lastError: LocalDatabaseError? {
        lastFailure.withLock { $0.map(LocalDatabaseError.init) }
    }

    /// The directory this database lives in; nil when it could not be opened.
    public var directory: URL? {
        (try? opened.get()).map { URL(fileURLWithPath: $0.path, isDirectory: true) }
    }

    /// Runs `body` with the engine; on failure records the error and returns `failure`.
    func run<R>(_ failure: R, _ body: (FaceEngine) throws(DatabaseError) -> R) -> R {
        do throws(DatabaseError) {
            return try body(try opened.get())
        } catch {
            lastFailure.withLock { $0 = error }
            return failure
        }
    }


    // MARK: DatabaseTarget

    /// Writes a record, replacing any record with the same id; durable when this returns
    /// (outside a transaction). Returns whether it was stored.
    @discardableResult
    public func write<T: Persistable>(_ record: Record<T>) -> Bool {
        run(false) { engine throws(DatabaseError) in
            try IndexDeclarations.ensureBlocking(T.self, in: engine, "write")
            _ = try engine.performBlocking(
                RecordEncoding.put(record, maxKeySize: engine.maxKeySize, encryption: engine.encryption, learnsMembers: engine.synchronizes), "write")
            return true
        }
    }

    /// Writes many records in one transaction (or in the open one). Returns how many were
    /// written: all of them, or 0 when any failed (then none is written).
    @discardableResult
    public func write<T: Persistable>(contentsOf records: [Record<T>]) -> Int {
        run(0) { engine throws(DatabaseError) in
            try IndexDeclarations.ensureBlocking(T.self, in: engine, "write")
            let (maxKeySize, encryption, learnsMembers) = (engine.maxKeySize, engine.encryption, engine.synchronizes)
            return try engine.performBlocking(batchOf: records.count) { limits, send, progress throws(DatabaseError) in
                try RecordEncoding.put(
                    contentsOf: records, maxKeySize: maxKeySize, encryption: encryption, learnsMembers: learnsMembers, partLimits: limits, parts: send,
                    progress: progress)
            }
        }
    }

    /// Every object stored as `T` (its current and legacy class names); `[]` on failure.
    public func read<T: Persistable>() -> [T] {
        run([]) { engine throws(DatabaseError) in try engine.readBlocking(ReadAll<T>(maxKeySize: engine.maxKeySize), "read") }
    }

    /// The object stored under `id`, as `T` or a subclass; nil when there is none or on failure.
    public func read<T: Persistable>(id: String) -> T? {
        run(nil) { engine throws(DatabaseError) in try engine.readBlocking(ReadByID<T>(id, maxKeySize: engine.maxKeySize), "read") }
    }

    /// The ids of every record stored as `T`; `[]` on failure.
    public func readIDs<T: Persistable>(_ allOf: T.Type) -> [String] {
        run([]) { engine throws(DatabaseError) in try engine.readBlocking(ReadIDs(allOf, maxKeySize: engine.maxKeySize), "readIDs") }
    }

    /// Deletes every record stored as `T`. Returns how many were deleted (0 on failure).
    @discardableResult
    public func delete<T: Persistable>(_ allOf: T.Type) -> Int {
        run(0) { engine throws(DatabaseError) in
            try engine.performBlocking(RecordEncoding.deleteAll(allOf, maxKeySize: engine.maxKeySize), "delete")
        }
    }

    /// Deletes the record `id`. Returns whether one was deleted.
    @discardableResult
    public func delete(id: String) -> Bool {
        run(false) { engine throws(DatabaseError) in
            try engine.performBlocking(.delete(RecordEncoding.recordKey(id, maxKeySize: engine.maxKeySize)), "delete") > 0
        }
    }

    /// Deletes the record `id`, stored as `T`, and, when `includingReferenced`, every record
    /// its references reach, transitively, in one transaction (see
    /// `LocalDatabase.delete(_:id:includingReferenced:)`). Returns how many were deleted (0 on
    /// failure).
    @discardableResult
    public func delete<T: Persistable>(_ type: T.Type, id: String, includingReferenced: Bool) -> Int {
        run(0) { engine throws(DatabaseError) in
            let read = ReadReachedIDs(byID: try ReadByID<T>(id, maxKeySize: engine.maxKeySize))
            guard includingReferenced else {
                guard try engine.readBlocking(ReadStoredType(byID: read.byID), "delete") else { return 0 }
                return try engine.performBlocking(.delete(read.byID.key), "delete")
            }
            guard let reached = try engine.readBlocking(read, "delete") else { return 0 }
            return try engine.performBlocking(deleteReaching(id, reached: reached, maxKeySize: engine.maxKeySize), "delete")
        }
    }

    /// Deletes every record. Returns how many were deleted (0 on failure).
    @discardableResult
    public func clearDatabase() -> Int {
        run(0) { engine throws(DatabaseError) in try engine.performBlocking(.clear, "clearDatabase") }
    }

    /// The number of records (0 on failure).
    public func count() -> Int {
        run(0) { engine throws(DatabaseError) in try engine.readBlocking(CountAll(), "count") }
    }

    /// The number of records stored as `T` (0 on failure).
    public func count<T: Persistable>(_ allOf: T.Type) -> Int {
        run(0) { engine throws(DatabaseError) in try engine.readBlocking(CountOf(allOf, maxKeySize: engine.maxKeySize), "count") }
    }

    /// Checks that the type index and the records agree and that every record decodes; nil on failure.
    public func verifyIntegrity() -> IntegrityReport? {
        run(nil) { engine throws(DatabaseError) in try engine.readBlocking(VerifyIntegrity(), "verifyIntegrity") }
    }

    /// Begins a transaction (see `LocalDatabase.startTransaction(override:)` for the rules).
    /// Returns whether one began.
    @discardableResult
    public func startTransaction(override: Bool) -> Bool {
        run(false) { engine throws(DatabaseError) in
            try engine.beginBlocking(override: override)
            return true
        }
    }

    /// Commits the open transaction. Returns whether it was committed.
    @discardableResult
    public func commitTransaction() -> Bool {
        run(false) { engine throws(DatabaseError) in
            try engine.endBlocking(commit: true)
            return true
        }
    }

    /// Rolls back the open transaction. Returns whether one was rolled back.
    @discardableResult
    public func rollbackTransaction() -> Bool {
        run(false) { engine throws(DatabaseError) in
            try engine.endBlocking(commit: false)
            return true
        }
    }

    /// Whether this database has a transaction open.
    public var transactionActive: Bool {
        (try? opened.get())?.transactionActive ?? false
    }

    /// Closes the database (see `LocalDatabase.close()`); later calls fail with
    /// `LocalDatabaseError.closed`. Closing again does nothing.
    public func close() {
        if case let .success(engine) = opened { engine.closeBlocking() }
    }
}

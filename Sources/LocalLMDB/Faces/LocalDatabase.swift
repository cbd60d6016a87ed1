import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// A persistent store of `Storable` objects in one directory, on LMDB.
///
/// ```swift
/// let database = try LocalDatabase(directory: url)
/// try await database.write(Record(id: "andre", data: person))
/// let person: Person? = try await database.read(id: "andre")
/// ```
///
/// Concurrency: writes are encoded in the caller's isolation and sent to the database's writer
/// thread as bytes (LMDB write transactions belong to the thread that began them); concurrent
/// writes outside a transaction share one durable commit. Reads outside a transaction do not
/// go through the writer at all: each runs in its own read-only snapshot on the caller's
/// thread, so any number of tasks read at once and never see a partly written object. Objects
/// are built and encoded in the caller's isolation, so model classes need not be `Sendable`.
///
/// Several databases on one directory (`LocalDatabase` or `SerializationDatabase`) share one
/// LMDB environment. Each has its own transaction: while one has a transaction open, writes
/// through the others wait for it to end (for at most their `busyTimeout`), and their reads
/// see the last committed state.
///
/// All methods throw `LocalDatabaseError`.
public actor LocalDatabase {
    /// This database's connection to its engine, where every transaction rule lives: the face
    /// asks nothing of it but the seam's operations (`EngineWriter`).
    nonisolated let engine: FaceEngine

    /// The default `busyTimeout`: 30 seconds.
    public static let defaultBusyTimeout = Duration.seconds(30)

    /// Opens the default database: `LocalLMDB/default` in the platform's application-support
    /// directory (`$XDG_DATA_HOME`, else `~/.local/share`, on Linux).
    /// - Throws: If the directory cannot be created or the database cannot be opened.
    public init() throws {
        try self.init(directory: Self.defaultDirectory)
    }

    /// Opens (creating if needed) the database in `directory`.
    ///
    /// The directory is created with owner-only permissions (0700), and its files are readable
    /// and writable by their owner only (0600). The directory is identified by the file
    /// system's identity of the folder (device and inode), not by its path: two paths to one
    /// folder (a symbolic link, a bind mount, another spelling on a case-insensitive volume)
    /// share one environment.
    /// - Parameters:
    ///   - directory: The folder for the database's files: LMDB's `data.mdb` and `lock.mdb`, and `writer.lock` (LocalLMDB's writer lock).
    ///   - configuration: Durability, busy timeout, limits and read-only mode.
    /// - Throws: `LocalDatabaseError.invalidDirectory`, `.incompatibleOptions` (another database
    ///   in this process has the directory open with another configuration), `.unsupportedFormat`,
    ///   `.busy` (opening for writing takes the writer lock once, and another process held it for
    ///   longer than the busy timeout) or `.storage` (a full disk, or a data file that lacks pages
    ///   in use, included).
    public init(directory: URL, configuration: DatabaseConfiguration) throws {
        do throws(DatabaseError) {
            engine = .lmdb(try Session(directory: directory, configuration: configuration.engine))
        } catch { throw LocalDatabaseError(error) }
    }

    /// A database on another engine than LMDB's: the seam's other side (`EngineWriter`).
    package init(engine: any EngineWriter) {
        self.engine = .other(engine)
    }

    /// Opens (creating if needed) the database in `directory`.
    /// - Parameters:
    ///   - directory: The folder for the database's files: LMDB's `data.mdb` and `lock.mdb`, and `writer.lock` (LocalLMDB's writer lock).
    ///   - durability: What a returned write survives; `.full` (survives power loss) by default.
    ///   - busyTimeout: How long writes and `startTransaction` wait while another database on
    ///     the same directory has a transaction open, before throwing
    ///     `LocalDatabaseError.busy`; `defaultBusyTimeout` (30 seconds) by default.
    /// - Throws: As `init(directory:configuration:)`.
    public init(directory: URL, durability: Durability = .full, busyTimeout: Duration = defaultBusyTimeout) throws {
        try self.init(directory: directory, configuration: DatabaseConfiguration(durability: durability, busyTimeout: busyTimeout))
    }

    deinit {
        // Writes already sent are committed and a transaction left open is rolled back, on the
        // writer thread, without waiting here.
        engine.closeWhenDropped()
    }

    /// The directory used by `init()`.
    public static var defaultDirectory: URL {
        #if os(Linux) || os(Android) || os(FreeBSD)
        let environment = ProcessInfo.processInfo.environment
        let base: URL
        if let dataHome = environment["XDG_DATA_HOME"], dataHome.hasPrefix("/") {
            base = URL(fileURLWithPath: dataHome, isDirectory: true)
        } else {
            base = FileManager.default.homeDirectoryForCurrentUser
                .appendingPathComponent(".local/share", isDirectory: true)
        }
        #else
        let base = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            ?? FileManager.default.temporaryDirectory
        #endif
        return base.appendingPathComponent("LocalLMDB/default", isDirectory: true)
    }

    /// The directory this database lives in (symbolic links resolved; the path it was first
    /// opened by in this process).
    public nonisolated var directory: URL {
        URL(fileURLWithPath: engine.path, isDirectory: true)
    }

    /// How long a write or `startTransaction` waits for another database's transaction on the
    /// same directory before failing with `LocalDatabaseError.busy`.
    public nonisolated var busyTimeout: Duration { engine.busyTimeout }

    /// The configuration the directory's environment was opened with (its `busyTimeout` is
    /// the first opener's; see `busyTimeout` for this database's).
    public nonisolated var configuration: DatabaseConfiguration { DatabaseConfiguration(engine.configuration) }

    // MARK: Writing

    /// Writes a record, replacing any record with the same id (whatever its class).
    ///
    /// The object is encoded in the caller's isolation. Outside a transaction the write is
    /// durable (per the database's `Durability`) when this returns; inside one it is visible to
    /// this database's reads at once and kept or undone with the transaction.
    /// - Returns: `true` once the record is stored (failures throw).
    /// - Throws: `LocalDatabaseError.emptyID` for an empty id, `.classNameConflict` when the
    ///   object's class name belongs to another type, `.busy`, `.readOnly`, `.closed`, `.storage`.
    @discardableResult
    public nonisolated(nonsending) func write<T: Persistable>(_ record: Record<T>) async throws -> Bool {
        do throws(DatabaseError) {
            try await IndexDeclarations.ensure(T.self, in: engine)
            _ = try await engine.perform(
                RecordEncoding.put(record, maxKeySize: engine.maxKeySize, encryption: engine.encryption, learnsMembers: engine.synchronizes))
            return true
        } catch { throw LocalDatabaseError(error) }
    }

    /// Writes many records at once, in one transaction (or in this database's open transaction),
    /// replacing any records with the same ids. Later records win over earlier ones with the same id.
    ///
    /// Much faster than writing the records one by one: they are encoded in the caller's
    /// isolation and sent to the writer thread together. A batch of more than 65,536 records
    /// is sent in parts, each applied while the next is encoded, in the same transaction: it
    /// commits whole or not at all, and other writes wait for it as for any batch.
    /// - Returns: The number of records written.
    /// - Throws: As `write(_:)`; if any record fails, nothing is written.
    @discardableResult
    public nonisolated(nonsending) func write<T: Persistable>(contentsOf records: [Record<T>]) async throws -> Int {
        do throws(DatabaseError) {
            try await IndexDeclarations.ensure(T.self, in: engine)
            let (maxKeySize, encryption, learnsMembers) = (engine.maxKeySize, engine.encryption, engine.synchronizes)
            return try await engine.perform(batchOf: records.count) { limits, send, progress throws(DatabaseError) in
                try RecordEncoding.put(
                    contentsOf: records, maxKeySize: maxKeySize, encryption: encryption, learnsMembers: learnsMembers, partLimits: limits, parts: send,
                    progress: progress)
            }
        } catch { throw LocalDatabaseError(error) }
    }

    /// Deletes every record stored as `T` (under its current or any legacy class name).
    /// Records of subclasses are stored under their own class names and are not deleted.
    /// - Returns: The number of records deleted.
    /// - Throws: `LocalDatabaseError.classNameConflict` when `T`'s stored name belongs to
    ///   another type in this database (nothing is deleted then).
    @discardableResult
    public nonisolated(nonsending) func delete<T: Persistable>(_ allOf: T.Type) async throws -> Int {
        do throws(DatabaseError) {
            return try await engine.perform(RecordEncoding.deleteAll(allOf, maxKeySize: engine.maxKeySize))
        } catch { throw LocalDatabaseError(error) }
    }

    /// Deletes the record with id `id`.
    /// - Returns: Whether a record was deleted.
    @discardableResult
    public nonisolated(nonsending) func delete(id: String) async throws -> Bool {
        do throws(DatabaseError) {
            return try await engine.perform(.delete(RecordEncoding.recordKey(id, maxKeySize: engine.maxKeySize))) > 0
        } catch { throw LocalDatabaseError(error) }
    }

    /// Deletes the record `id`, stored as `T`, and, when `includingReferenced`, every record
    /// its references reach (`Reference`), transitively, in one transaction.
    ///
    /// The references are those `T`'s model (and the models it reaches) reads as references, as
    /// a read of `id` resolves them; the delete follows them again in its transaction, so a
    /// record a concurrent write stopped referring to is kept. A record another one still
    /// refers to is deleted too: reading that one then throws
    /// `LocalDatabaseError.missingReference` (or gives nil, for an optional reference). See
    /// <doc:References>.
    /// - Returns: The number of records deleted (0 when there is no record `id`).
    /// - Throws: `typeMismatch` when the record is not a `T` (checked just before the delete's
    ///   transaction); with `includingReferenced`, what reading the record as `T` throws
    ///   (`missingReference`, `corruptRecord`…). Nothing is deleted then.
    @discardableResult
    public nonisolated(nonsending) func delete<T: Persistable>(_ type: T.Type, id: String, includingReferenced: Bool) async throws -> Int {
        do throws(DatabaseError) {
            let read = ReadReachedIDs(byID: try ReadByID<T>(id, maxKeySize: engine.maxKeySize))
            guard includingReferenced else {
                guard try await engine.read(ReadStoredType(byID: read.byID)) else { return 0 }
                return try await engine.perform(.delete(read.byID.key))
            }
            guard let reached = try await engine.read(read) else { return 0 }
            return try await engine.perform(deleteReaching(id, reached: reached, maxKeySize: engine.maxKeySize))
        } catch { throw LocalDatabaseError(error) }
    }

    /// Deletes every record.
    /// - Returns: The number of records deleted.
    @discardableResult
    public nonisolated(nonsending) func clearDatabase() async throws -> Int {
        do throws(DatabaseError) {
            return try await engine.perform(.clear)
        } catch { throw LocalDatabaseError(error) }
    }

    // MARK: Reading

    /// The object stored under `id`, as its stored class when that is `T` or a subclass of `T`.
    /// - Returns: nil when no record has this id.
    /// - Throws: `LocalDatabaseError.typeMismatch` when the record holds another class,
    ///   `.unresolvableClass` when its class (or a nested object's) cannot be found in this
    ///   process, `.corruptRecord` when its bytes cannot be decoded.
    public nonisolated(nonsending) func read<T: Persistable>(id: String) async throws -> T? {
        do throws(DatabaseError) {
            let key = try RecordEncoding.recordKey(id, maxKeySize: engine.maxKeySize)
            await PoolDemand.giveWay()  // Looping readers never hold up the library's resumed tasks.
            guard try engine.readsSnapshotOnCallersThread() else { return try await engine.readInTransaction(ReadByID<T>(id, key: key)) }
            return try Self.readRecord(key, id: id, in: engine)
        } catch { throw LocalDatabaseError(error) }
    }

    /// The hot path of `read(id:)`, in a snapshot on the calling thread. Synchronous, so its
    /// temporaries of generic type need no task allocation; and it builds no generic type (it
    /// runs unspecialized when called from another module): a `ReadByID<T>`, a `T??` or a
    /// captured `T?` would cost a metadata look-up per read.
    private nonisolated static func readRecord<T: Persistable>(_ key: StorageKey, id: String, in engine: FaceEngine) throws(DatabaseError) -> T? {
        try engine.readRecord(key, id: id) { record, classes throws(DatabaseError) in
            try record?.instantiate(as: T.self, context: classes)
        }
    }

    /// Every object stored as `T` (under its current or any legacy class name). Objects of
    /// subclasses are stored under their own class names and are not included. Records under
    /// `T`'s current name come first, then those under each legacy name; within a name, in the
    /// byte order of their ids (ids over 511 bytes last).
    /// - Throws: `LocalDatabaseError.corruptRecord` when a record cannot be decoded.
    public nonisolated(nonsending) func read<T: Persistable>() async throws -> [T] {
        do throws(DatabaseError) {
            return try await engine.read(ReadAll<T>(maxKeySize: engine.maxKeySize))
        } catch { throw LocalDatabaseError(error) }
    }

    /// The ids of every record stored as `T` (under its current or any legacy class name), in
    /// the order of `read()`.
    public nonisolated(nonsending) func readIDs<T: Persistable>(_ allOf: T.Type) async throws -> [String] {
        do throws(DatabaseError) {
            return try await engine.read(ReadIDs(allOf, maxKeySize: engine.maxKeySize))
        } catch { throw LocalDatabaseError(error) }
    }

    /// The number of records: O(1).
    public nonisolated(nonsending) func count() async throws -> Int {
        do throws(DatabaseError) {
            return try await engine.read(CountAll())
        } catch { throw LocalDatabaseError(error) }
    }

    /// The number of records stored as `T` (under its current or any legacy class name): O(1).
    public nonisolated(nonsending) func count<T: Persistable>(_ allOf: T.Type) async throws -> Int {
        do throws(DatabaseError) {
            return try await engine.read(CountOf(allOf, maxKeySize: engine.maxKeySize))
        } catch { throw LocalDatabaseError(error) }
    }

    /// Checks that the type index and the records agree and that every record decodes.
    ///
    /// Run it after a crash, or any time: it reads one consistent snapshot (inside this
    /// database's transaction when one is open) and changes nothing. It walks every record.
    public nonisolated(nonsending) func verifyIntegrity() async throws -> IntegrityReport {
        do throws(DatabaseError) {
            return try await engine.read(VerifyIntegrity())
        } catch { throw LocalDatabaseError(error) }
    }

    // MARK: Closing

    /// Closes the database: writes already made are committed first, an open transaction of
    /// this database is rolled back, and, when no other database in the process uses the
    /// directory, the environment closes now (once reads in progress end). Later calls throw
    /// `LocalDatabaseError.closed`. Closing again does nothing.
    public nonisolated(nonsending) func close() async {
        await engine.close()
    }
}

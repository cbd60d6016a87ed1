import Foundation

/// A persistent store of `Storable` objects in one directory, on LMDB.
///
/// ```swift
/// let database = try LocalDatabase(directory: url)
/// try await database.write(Record(id: "andre", data: person))
/// let person: Person? = try await database.read(id: "andre")
/// ```
///
/// Concurrency: the actor runs on a dedicated writer thread (LMDB write transactions belong to
/// the thread that began them). Writes are encoded in the caller's isolation and sent to that
/// thread as bytes; concurrent writes outside a transaction share one durable commit. Reads
/// outside a transaction do not go through the actor at all: each runs in its own read-only
/// snapshot on the caller's thread, so any number of tasks read at once and never see a
/// partly written object. Model classes need not be `Sendable`.
///
/// Several `LocalDatabase` values on one directory share one LMDB environment and writer.
/// Each has its own transaction: while one has a transaction open, writes through the others
/// wait for it to end, and their reads see the last committed state.
///
/// All methods throw `LocalDatabaseError`.
public actor LocalDatabase {
    nonisolated let engine: Engine
    /// Identifies this database's transaction to the shared writer.
    nonisolated let owner: Writer.Owner
    /// Mirrors "this database has a transaction open", so nonisolated reads can tell, without a
    /// hop, whether they must read inside the transaction.
    nonisolated let transactionFlag = Locked(false)
    /// How long a write or `startTransaction` waits for another database's transaction on the
    /// same directory before failing with `LocalDatabaseError.busy`.
    public nonisolated let busyTimeout: Duration

    /// The default `busyTimeout`: long enough for real transactions, short enough that a task
    /// waiting on a transaction it holds itself (through another database) gets an error.
    public static let defaultBusyTimeout = Duration.seconds(30)

    private static let ownerCounter = Locked<UInt64>(0)

    /// Opens the default database: `LocalLMDB/default` in the platform's application-support
    /// directory (`$XDG_DATA_HOME`, else `~/.local/share`, on Linux).
    /// - Throws: If the directory cannot be created or the database cannot be opened.
    public init() throws {
        try self.init(directory: Self.defaultDirectory)
    }

    /// Opens (creating if needed) the database in `directory`.
    ///
    /// The directory is created with owner-only permissions (0700), and its files are readable
    /// and writable by their owner only (0600). Opening the same directory again in the same
    /// process shares the open environment; the durability must then match.
    /// The directory is identified by the file system's identity of the folder (device and
    /// inode), not by its path: two paths to one folder (a symbolic link, a bind mount, another
    /// spelling on a case-insensitive volume) share one environment.
    /// - Parameters:
    ///   - directory: The folder for the database's two files, `data.mdb` and `lock.mdb`.
    ///   - durability: What a returned write survives; `.full` (survives power loss) by default.
    ///   - busyTimeout: How long writes and `startTransaction` wait while another database on
    ///     the same directory has a transaction open, before throwing
    ///     `LocalDatabaseError.busy`; `defaultBusyTimeout` (30 seconds) by default.
    /// - Throws: `LocalDatabaseError.invalidDirectory`, `.incompatibleOptions`,
    ///   `.unsupportedFormat` or `.storage` (a full disk included).
    public init(directory: URL, durability: Durability = .full, busyTimeout: Duration = defaultBusyTimeout) throws {
        self.busyTimeout = busyTimeout
        engine = try Engine.shared(directory: directory, durability: durability)
        owner = Self.ownerCounter.withLock { counter in
            counter += 1
            return counter
        }
    }

    deinit {
        // A transaction left open is rolled back, on the thread that owns it.
        let engine = engine
        let owner = owner
        engine.thread.submit { engine.writer.abandon(owner: owner) }
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

    /// The database's writer thread: every job of this actor runs there, so an LMDB write
    /// transaction stays on the thread that began it across awaits.
    public nonisolated var unownedExecutor: UnownedSerialExecutor {
        engine.thread.asUnownedSerialExecutor()
    }

    /// The directory this database lives in (symbolic links resolved).
    public nonisolated var directory: URL {
        URL(fileURLWithPath: engine.path, isDirectory: true)
    }

    // MARK: Writing

    /// Writes a record, replacing any record with the same id (whatever its class).
    ///
    /// The object is encoded in the caller's isolation. Outside a transaction the write is
    /// durable (per the database's `Durability`) when this returns; inside one it is visible to
    /// this database's reads at once and kept or undone with the transaction.
    /// - Returns: `true` once the record is stored (failures throw).
    /// - Throws: `LocalDatabaseError.emptyID` for an empty id, `.storage` if LMDB fails.
    @discardableResult
    public nonisolated(nonsending) func write<T: Storable>(_ record: Record<T>) async throws -> Bool {
        var classes: [StoredClass] = []
        let encoded = try RecordCodec.encode(record, maxKeySize: engine.maxKeySize, classes: &classes)
        _ = try await perform(.put([encoded], classes: classes))
        return true
    }

    /// Writes many records at once, in one transaction (or in this database's open transaction),
    /// replacing any records with the same ids. Later records win over earlier ones with the same id.
    ///
    /// Much faster than writing the records one by one: they are encoded in the caller's
    /// isolation and sent to the writer thread together.
    /// - Returns: The number of records written.
    /// - Throws: `LocalDatabaseError.emptyID` if any id is empty (then nothing is written).
    @discardableResult
    public nonisolated(nonsending) func write<T: Storable>(contentsOf records: [Record<T>]) async throws -> Int {
        let maxKeySize = engine.maxKeySize
        var classes: [StoredClass] = []
        let encoded = try records.map { record throws(LocalDatabaseError) in
            try RecordCodec.encode(record, maxKeySize: maxKeySize, classes: &classes)
        }
        guard !encoded.isEmpty else { return 0 }
        return try await perform(.put(encoded, classes: classes))
    }

    /// Deletes every record stored as `T` (under its current or any legacy class name).
    /// Records of subclasses are stored under their own class names and are not deleted.
    /// - Returns: The number of records deleted.
    /// - Throws: `LocalDatabaseError.classNameConflict` when `T`'s stored name belongs to
    ///   another type in this database (nothing is deleted then).
    @discardableResult
    public nonisolated(nonsending) func delete<T: Storable>(_ allOf: T.Type) async throws -> Int {
        try await perform(.deleteTypes(typeKeys(allOf), owner: TypeRegistry.storedClass(of: allOf)))
    }

    /// Deletes the record with id `id`.
    /// - Returns: Whether a record was deleted.
    @discardableResult
    public nonisolated(nonsending) func delete(id: String) async throws -> Bool {
        try await perform(.delete(recordKey(id))) > 0
    }

    /// Deletes every record.
    /// - Returns: The number of records deleted.
    @discardableResult
    public nonisolated(nonsending) func clearDatabase() async throws -> Int {
        try await perform(.clear)
    }

    /// Applies one operation on the writer thread: in this database's transaction if one is
    /// open, else in the next group commit.
    ///
    /// The operation is sent as a plain closure rather than an actor job, and the caller is
    /// resumed directly from the writer thread: one thread hop per write instead of two.
    nonisolated(nonsending) func perform(_ operation: WriteOperation) async throws -> Int {
        let writer = engine.writer
        let owner = owner
        let transactionFlag = transactionFlag
        let busyTimeout = busyTimeout
        return try await withCheckedThrowingContinuation { continuation in
            engine.thread.submit {
                writer.perform(operation, owner: owner, busyTimeout: busyTimeout) { result in
                    if case .failure = result {
                        // A failed write may have ended the transaction (see Writer.applyInTransaction).
                        transactionFlag.withLock { $0 = writer.hasTransaction(owner: owner) }
                    }
                    continuation.resume(with: result)
                }
            }
        }
    }

    // MARK: Reading

    /// The object stored under `id`, as its stored class when that is `T` or a subclass of `T`.
    /// - Returns: nil when no record has this id.
    /// - Throws: `LocalDatabaseError.typeMismatch` when the record holds another class,
    ///   `.corruptRecord` when its bytes cannot be decoded.
    public nonisolated(nonsending) func read<T: Storable>(id: String) async throws -> T? {
        let key = try recordKey(id)
        let store = engine.store
        if transactionFlag.withLock({ $0 }),
           let found = try await readInTransaction({ transaction throws(LocalDatabaseError) in
               try store.value(key, in: transaction).map { value throws(LocalDatabaseError) in
                   try RecordCodec.decode(value: value, id: id).detached()
               }
           }) {
            return try found?.stored.instantiate(as: T.self, context: readContext(nil))
        }
        // Outside a transaction, the object is built inside the snapshot, from the stored bytes.
        return try engine.environment.withReadTransaction { transaction throws(LocalDatabaseError) -> T? in
            guard let value = try store.value(key, in: transaction) else { return nil }
            return try RecordCodec.decode(value: value, id: id).instantiate(as: T.self, context: readContext(transaction))
        }
    }

    /// Every object stored as `T` (under its current or any legacy class name), in id order.
    /// Objects of subclasses are stored under their own class names and are not included.
    /// - Throws: `LocalDatabaseError.corruptRecord` when a record cannot be decoded.
    public nonisolated(nonsending) func read<T: Storable>() async throws -> [T] {
        let typeKeys = typeKeys(T.self)
        let owner = TypeRegistry.storedClass(of: T.self)
        let store = engine.store
        if transactionFlag.withLock({ $0 }),
           let objects = try await readInTransaction({ transaction throws(LocalDatabaseError) in
               try store.checkOwner(owner, in: transaction)
               // Ids are made for every record here: reads in a transaction copy each record anyway.
               return try store.objects(typeKeys: typeKeys, in: transaction) { stored, id in (stored.detached(), id()) }
           }) {
            let scratch = ReadScratch.current
            return try scratch.reading(in: readContext(nil)) { () throws(LocalDatabaseError) in
                try objects.map { detached, id throws(LocalDatabaseError) in
                    let object = scratch.restore(T.self, from: detached.stored.object)
                    try scratch.throwFailure(id: id)
                    return object
                }
            }
        }
        // Outside a transaction, objects are built inside the snapshot, from the stored bytes.
        return try engine.environment.withReadTransaction { transaction throws(LocalDatabaseError) in
            try store.checkOwner(owner, in: transaction)
            let scratch = ReadScratch.current
            return try scratch.reading(in: readContext(transaction)) { () throws(LocalDatabaseError) in
                try store.objects(typeKeys: typeKeys, in: transaction) { stored, id throws(LocalDatabaseError) in
                    let object = scratch.restore(T.self, from: stored.object)
                    try scratch.throwFailure(id: id())
                    return object
                }
            }
        }
    }

    /// The ids of every record stored as `T` (under its current or any legacy class name).
    public nonisolated(nonsending) func readIDs<T: Storable>(_ allOf: T.Type) async throws -> [String] {
        let typeKeys = typeKeys(allOf)
        let owner = TypeRegistry.storedClass(of: allOf)
        let store = engine.store
        return try await snapshot { transaction throws(LocalDatabaseError) in
            try store.checkOwner(owner, in: transaction)
            return try store.ids(typeKeys: typeKeys, in: transaction)
        }
    }

    /// The number of records: O(1).
    public nonisolated(nonsending) func count() async throws -> Int {
        let store = engine.store
        return try await snapshot { transaction throws(LocalDatabaseError) in
            try store.count(in: transaction)
        }
    }

    /// The number of records stored as `T` (under its current or any legacy class name): O(1).
    public nonisolated(nonsending) func count<T: Storable>(_ allOf: T.Type) async throws -> Int {
        let typeKeys = typeKeys(allOf)
        let owner = TypeRegistry.storedClass(of: allOf)
        let store = engine.store
        return try await snapshot { transaction throws(LocalDatabaseError) in
            try store.checkOwner(owner, in: transaction)
            return try store.count(typeKeys: typeKeys, in: transaction)
        }
    }

    /// Checks that the type index and the records agree and that every record decodes.
    ///
    /// Run it after a crash, or any time: it reads one consistent snapshot (inside this
    /// database's transaction when one is open) and changes nothing. It walks every record.
    public nonisolated(nonsending) func verifyIntegrity() async throws -> IntegrityReport {
        let store = engine.store
        return try await snapshot { transaction throws(LocalDatabaseError) in
            try store.verify(in: transaction)
        }
    }

    /// Runs `body` in this database's open transaction when it has one (so reads see its
    /// uncommitted changes), else in a fresh read-only snapshot on the calling thread.
    nonisolated(nonsending) func snapshot<R: Sendable>(
        _ body: @escaping @Sendable (Transaction) throws(LocalDatabaseError) -> R
    ) async throws(LocalDatabaseError) -> R {
        if transactionFlag.withLock({ $0 }), let result = try await readInTransaction(body) {
            return result
        }
        return try engine.environment.withReadTransaction(body)
    }

    private func readInTransaction<R: Sendable>(
        _ body: @Sendable (Transaction) throws(LocalDatabaseError) -> R
    ) throws(LocalDatabaseError) -> R? {
        try engine.writer.readInTransaction(owner: owner, body)
    }

    // MARK: Keys

    private nonisolated func recordKey(_ id: String) throws(LocalDatabaseError) -> StorageKey {
        guard !id.isEmpty else { throw .emptyID }
        return StorageKey(id, maxKeySize: engine.maxKeySize)
    }

    /// Where a read from this database looks up stored classes: in `transaction`, or in a
    /// fresh snapshot when nil.
    private nonisolated func readContext(_ transaction: Transaction?) -> ReadContext {
        ReadContext(database: engine.serial, classes: engine.store.classTable, transaction: transaction)
    }

    /// The index keys of `T`'s current class name and every legacy name of it.
    private nonisolated func typeKeys<T: Storable>(_ type: T.Type) -> [StorageKey] {
        Legacy.allNames(of: TypeRegistry.name(of: type)).map { StorageKey($0, maxKeySize: engine.maxKeySize) }
    }

    func updateTransactionFlag() {
        let open = engine.writer.hasTransaction(owner: owner)
        transactionFlag.withLock { $0 = open }
    }
}

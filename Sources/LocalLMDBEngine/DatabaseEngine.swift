import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import Foundation

/// One open database directory: its LMDB environment and record store, its writer thread and
/// the transaction coordinator confined to it. It speaks bytes and class names only; the faces
/// (`LocalDatabase`, `SerializationDatabase`) reach it through their `Session`s.
///
/// LMDB forbids opening an environment twice in one process, so engines are shared: every
/// session on a directory (however the directory is reached) uses the same engine. An engine
/// closes when its last session closes or is deinitialized: the environment closes then, not
/// whenever the last reference happens to go.
@usableFromInline package final class DatabaseEngine: Sendable {
    package let path: String
    package let configuration: EngineConfiguration
    @usableFromInline package let store: RecordStore
    /// The writer thread; for a read-only engine, one thread shared by every read-only engine
    /// in the process (it answers the few jobs a read-only session sends, and never writes).
    let thread: WriterThread
    let coordinator: TransactionCoordinator
    /// Wakes observers after commits (this process's at once, others' by polling).
    package let notifier: ChangeNotifier
    /// Identifies this engine for per-thread caches: unique for the life of the process.
    @usableFromInline package let serial: UInt64
    private let identity: FileIdentity
    /// Sessions attached and not yet closed. Guarded by the registry's lock.
    nonisolated(unsafe) private var sessions = 0

    /// The store's environment, unretained: the store keeps it for as long as the engine lives,
    /// and a strong reference would be retained and released by every read, from every
    /// thread, on one shared reference count. The read path uses it through
    /// `Environment.withReadTransaction(in:)`, which retains nothing.
    @usableFromInline let unmanagedEnvironment: Unmanaged<Environment>
    /// What a read by id needs of the engine, as plain values.
    @usableFromInline package let readTarget: ReadTarget

    var environment: Environment { unmanagedEnvironment.takeUnretainedValue() }
    package var maxKeySize: Int { readTarget.maxKeySize }

    /// What a read by id needs of an engine, as values that are copied without retaining
    /// anything (`classTable` holds its environment unowned).
    @usableFromInline package struct ReadTarget: Sendable {
        @usableFromInline package let records: DatabaseHandle
        @usableFromInline package let serial: UInt64
        @usableFromInline package let classTable: ClassTable
        @usableFromInline package let maxKeySize: Int
        @usableFromInline package let encryption: StoreEncryption?
    }

    /// The map an empty database starts with; it doubles as it fills.
    static let initialMapSize = 16 << 20

    private static let serials = Locked<UInt64>(0)
    private static let readOnlyThread = Locked<WriterThread?>(nil)

    private init(directory: DirectoryHandle, configuration: EngineConfiguration) throws(DatabaseError) {
        let environment = try Environment(
            directory: directory, sync: configuration.sync, readOnly: configuration.readOnly,
            initialMapSize: Self.initialMapSize, maximumMapSize: configuration.maximumMapSize,
            maxReaders: configuration.maxReaders, maxDatabases: 16, writerLockTimeout: configuration.busyTimeout)
        let store = try RecordStore(
            environment: environment, readOnly: configuration.readOnly,
            changeLogLimits: ChangeLog.Limits(commits: max(1, configuration.changeLogCommits), bytes: max(0, configuration.changeLogBytes)),
            encryption: configuration.encryption)
        self.path = directory.path
        self.identity = directory.identity
        self.configuration = configuration
        self.store = store
        unmanagedEnvironment = .passUnretained(environment)
        if configuration.readOnly {
            thread = Self.readOnlyThread.withLock { shared in
                if let shared { return shared }
                let thread = WriterThread(name: "LocalLMDB read-only")
                shared = thread
                return thread
            }
        } else {
            thread = WriterThread(name: "LocalLMDB writer")
        }
        coordinator = TransactionCoordinator(thread: thread, store: store)
        let publishing = Locked(false)
        /// The unpublished commit the last poll found: a live writer between its two steps is
        /// found too, for a moment, so only one found by two polls in a row (50 ms apart) is
        /// published (else an observing process would take the writer lock, and sometimes commit,
        /// for every other process's commit it happened to catch).
        let lastUnpublished = Locked<Int?>(nil)
        let notifier = ChangeNotifier { [store] in
            guard let log = store.changeLog else { return nil }
            return try? store.environment.withReadTransaction { transaction throws(DatabaseError) in try log.bounds(in: transaction).last }
        } settle: { [store, thread, weak coordinator, readOnly = configuration.readOnly] in
            // A read-only process cannot take the writer lock: it sees such a commit once a
            // writing process opens the database or writes.
            guard !readOnly else { return }
            let found = store.environment.unpublishedCommit
            let seenBefore = lastUnpublished.withLock { last in
                defer { last = found }
                return found != nil && last == found
            }
            guard seenBefore, publishing.withLock({ busy in defer { busy = true }; return !busy }) else { return }
            thread.submit { [weak coordinator] in
                coordinator?.publishCommits()
                publishing.withLock { $0 = false }
            }
        }
        self.notifier = notifier
        coordinator.didCommit = { sequence in notifier.committed(sequence) }
        serial = Self.serials.withLock { count in
            count += 1
            return count
        }
        readTarget = ReadTarget(records: store.records, serial: serial, classTable: store.classTable, maxKeySize: environment.maxKeySize, encryption: store.encryption)
    }

    deinit {
        if !configuration.readOnly { thread.stop() }
    }

    // MARK: Sessions

    private static let registry = EngineRegistry()

    /// The engine for `directory`, opening it (and creating the directory, unless read-only) if
    /// needed, with one more session attached.
    static func attach(directory: URL, configuration: EngineConfiguration) throws(DatabaseError) -> DatabaseEngine {
        let handle = try DirectoryHandle(path: try prepare(directory, create: !configuration.readOnly))
        return try registry.attach(handle.identity) { () throws(DatabaseError) in
            try DatabaseEngine(directory: handle, configuration: configuration)
        } compatible: { engine throws(DatabaseError) in
            if let reason = engine.configuration.incompatibility(with: configuration) {
                throw .incompatibleOptions(path: handle.path, reason: reason)
            }
            // The same key ids: the keys themselves must be the database's too.
            if configuration.encryption !== engine.configuration.encryption {
                try engine.store.checkKeys(of: configuration.encryption, path: handle.path)
            }
            engine.sessions += 1
        }
    }

    /// Detaches a session: the last one closes the engine (its writer thread stops once its
    /// queue is done, and the environment closes once every read in progress has ended).
    func detach() {
        let last = Self.registry.withLock { (entries: inout [FileIdentity: EngineRegistry.Entry]) -> Bool in
            sessions -= 1
            guard sessions == 0 else { return false }
            if case let .open(weak) = entries[identity], weak.engine === self { entries[identity] = nil }
            return true
        }
        guard last else { return }
        if !configuration.readOnly { thread.stop() }
        environment.close()
    }

    /// Creates `directory` (owner-only permissions) if missing and allowed, and returns its
    /// canonical path.
    private static func prepare(_ directory: URL, create: Bool) throws(DatabaseError) -> String {
        let fileManager = FileManager.default
        let requested = directory.standardizedFileURL.path
        var isDirectory: ObjCBool = false
        if fileManager.fileExists(atPath: requested, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw .invalidDirectory(path: requested, reason: "a file exists at this path")
            }
        } else if create {
            do {
                try fileManager.createDirectory(
                    at: directory, withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o700])
            } catch {
                throw .invalidDirectory(path: requested, reason: "cannot create it (\(error.localizedDescription))")
            }
        } else {
            throw .invalidDirectory(path: requested, reason: "there is no database to open read-only")
        }
        guard fileManager.isReadableFile(atPath: requested), !create || fileManager.isWritableFile(atPath: requested) else {
            throw .invalidDirectory(path: requested, reason: create ? "it is not readable and writable" : "it is not readable")
        }
        return directory.standardizedFileURL.resolvingSymlinksInPath().path
    }
}

/// The open engines by directory identity. An engine is opened outside the lock (opening can
/// wait for another process's writer lock), with its entry marked as opening meanwhile so that a
/// concurrent open of the same directory waits for it instead of opening it twice.
package final class EngineRegistry: @unchecked Sendable {
    struct WeakEngine {
        weak var engine: DatabaseEngine?
    }

    enum Entry {
        case opening
        case open(WeakEngine)
    }

    // Guarded by `condition`.
    private let condition = NSCondition()
    private var entries: [FileIdentity: Entry] = [:]

    /// Runs `body` holding the lock.
    func withLock<R>(_ body: (inout [FileIdentity: Entry]) -> R) -> R {
        condition.lock()
        defer { condition.unlock() }
        return body(&entries)
    }

    /// The open engine for `identity` after `compatible` accepted it (under the lock), or one
    /// made by `open` (outside the lock) and then given to `compatible`.
    func attach(
        _ identity: FileIdentity, open: () throws(DatabaseError) -> DatabaseEngine,
        compatible: (DatabaseEngine) throws(DatabaseError) -> Void
    ) throws(DatabaseError) -> DatabaseEngine {
        condition.lock()
        while true {
            switch entries[identity] {
            case .opening:
                condition.wait()
                continue
            case let .open(weak)?:
                if let engine = weak.engine {
                    defer { condition.unlock() }
                    try compatible(engine)
                    return engine
                }
            case nil:
                break
            }
            break
        }
        entries[identity] = .opening
        condition.unlock()
        let engine: DatabaseEngine
        do throws(DatabaseError) {
            engine = try open()
        } catch {
            condition.lock()
            entries[identity] = nil
            condition.broadcast()
            condition.unlock()
            throw error
        }
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        entries[identity] = .open(WeakEngine(engine: engine))
        try compatible(engine)
        return engine
    }
}

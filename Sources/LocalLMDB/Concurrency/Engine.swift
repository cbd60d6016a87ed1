import Foundation

/// Everything one open database directory needs: its LMDB environment and record store, its
/// writer thread and the writer confined to it.
///
/// LMDB forbids opening an environment twice in one process, so engines are shared: every
/// `LocalDatabase` on the same directory uses the same engine, which lives as long as any of
/// them. When the last one goes, the writer thread stops and the environment closes.
final class Engine: Sendable {
    let path: String
    let durability: Durability
    let store: RecordStore
    let thread: WriterThread
    let writer: Writer
    /// Identifies this engine for per-thread caches: unique for the life of the process.
    let serial: UInt64

    private static let serials = Locked<UInt64>(0)

    var environment: Environment { store.environment }
    var maxKeySize: Int { store.environment.maxKeySize }

    /// The map an empty database starts with; it doubles as it fills.
    static let initialMapSize = 16 << 20

    private struct WeakEngine {
        weak var engine: Engine?
    }

    /// Open engines by directory identity: one directory reached by two paths is one engine.
    private static let openEngines = Locked<[FileIdentity: WeakEngine]>([:])

    private init(directory: DirectoryHandle, durability: Durability) throws(LocalDatabaseError) {
        let path = directory.path
        let environment = try Environment(
            directory: directory, syncFlags: durability.environmentFlags,
            initialMapSize: Self.initialMapSize, maxDatabases: 8)
        let store = try RecordStore(environment: environment)
        self.path = path
        self.durability = durability
        self.store = store
        self.thread = WriterThread(name: "LocalLMDB writer")
        self.writer = Writer(thread: thread, store: store)
        self.serial = Self.serials.withLock { count in
            count += 1
            return count
        }
    }

    deinit {
        thread.stop()
    }

    /// The engine for `directory`, opening it (and creating the directory) if needed.
    static func shared(directory: URL, durability: Durability) throws(LocalDatabaseError) -> Engine {
        let handle = try DirectoryHandle(path: try prepare(directory))
        return try openEngines.withLock { engines throws(LocalDatabaseError) in
            if let engine = engines[handle.identity]?.engine {
                guard engine.durability == durability else {
                    throw .incompatibleOptions(path: handle.path, reason: "durability \(engine.durability), not \(durability)")
                }
                return engine
            }
            let engine = try Engine(directory: handle, durability: durability)
            engines = engines.filter { $0.value.engine != nil }
            engines[handle.identity] = WeakEngine(engine: engine)
            return engine
        }
    }

    /// Creates `directory` (owner-only permissions) if missing and returns its canonical path.
    private static func prepare(_ directory: URL) throws(LocalDatabaseError) -> String {
        let fileManager = FileManager.default
        let requested = directory.standardizedFileURL.path
        var isDirectory: ObjCBool = false
        if fileManager.fileExists(atPath: requested, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw .invalidDirectory(path: requested, reason: "a file exists at this path")
            }
        } else {
            do {
                try fileManager.createDirectory(
                    at: directory, withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o700])
            } catch {
                throw .invalidDirectory(path: requested, reason: "cannot create it (\(error.localizedDescription))")
            }
        }
        guard fileManager.isWritableFile(atPath: requested), fileManager.isReadableFile(atPath: requested) else {
            throw .invalidDirectory(path: requested, reason: "it is not readable and writable")
        }
        return directory.standardizedFileURL.resolvingSymlinksInPath().path
    }
}

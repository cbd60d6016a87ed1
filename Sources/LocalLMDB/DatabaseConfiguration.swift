import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// How a database is opened. Every field has a safe default.
///
/// ```swift
/// var configuration = DatabaseConfiguration()
/// configuration.busyTimeout = .seconds(5)
/// let database = try LocalDatabase(directory: url, configuration: configuration)
/// ```
///
/// Every `LocalDatabase` and `SerializationDatabase` on one directory in one process shares one
/// LMDB environment; they must agree on `durability`, `readOnly`, `maximumMapSize`, `maxReaders`
/// and the change log's limits (else `LocalDatabaseError.incompatibleOptions`). `busyTimeout` is
/// each database's own.
public struct DatabaseConfiguration: Sendable, Equatable {
    /// Every value, in the engine's form (its defaults are the ones documented here): the
    /// properties below read and write it.
    private(set) var engine = EngineConfiguration()

    /// What a returned write survives. `.full` (survives power loss) by default.
    public var durability: Durability {
        get { Durability(engine.sync) }
        set { engine.sync = newValue.syncMode }
    }
    /// How long a write or `startTransaction` waits while another database on the same
    /// directory has a transaction open, before failing with `LocalDatabaseError.busy`; and how
    /// long a write transaction waits for another process's (see `writer.lock` in
    /// <doc:ConcurrencyAndTransactions>), which the first database opened on the directory in a
    /// process sets for every database of that process on it.
    /// 30 seconds by default: long enough for real transactions, short enough that a task that
    /// waits on a transaction it holds itself (through another database) gets an error.
    public var busyTimeout: Duration {
        get { engine.busyTimeout }
        set { engine.busyTimeout = newValue }
    }
    /// The largest the memory map (and so the data file) may grow to. A write that needs more
    /// fails with a `.storage` error (`MDB_MAP_FULL`) and changes nothing. 1 TiB by default; the map
    /// starts at 16 MiB and doubles as it fills.
    public var maximumMapSize: Int {
        get { engine.maximumMapSize }
        set { engine.maximumMapSize = newValue }
    }
    /// How many read transactions may be open at once across every process using the
    /// directory (LMDB's reader slots). 256 by default.
    public var maxReaders: Int {
        get { engine.maxReaders }
        set { engine.maxReaders = newValue }
    }
    /// Open for reading only: no write lock is ever taken and no writer thread is started, so
    /// the database can be read on a read-only volume or while another process holds a long
    /// write transaction. Writes and transactions fail with `LocalDatabaseError.readOnly`. The
    /// database must exist.
    public var readOnly: Bool {
        get { engine.readOnly }
        set { engine.readOnly = newValue }
    }
    /// How many commits the change log keeps (`changes(since:)`, observation): 10,000 by
    /// default. Older entries are trimmed by the commit that adds a new one. At least 1.
    public var changeLogCommits: Int {
        get { engine.changeLogCommits }
        set { engine.changeLogCommits = newValue }
    }
    /// How many bytes the change log keeps, beyond its newest entry: 64 MiB by default (an
    /// entry holds each id a commit wrote or deleted, about 10 bytes more than the id and class
    /// name).
    public var changeLogBytes: Int {
        get { engine.changeLogBytes }
        set { engine.changeLogBytes = newValue }
    }

    /// Encryption of stored values at rest; nil (the default): none. Every database on one
    /// directory in one process must agree on it (its current key id), and each one's keys are
    /// checked against the database's: a wrong key fails the open with
    /// `LocalDatabaseError.wrongEncryptionKey`. See <doc:Encryption>.
    public var encryption: DatabaseEncryption? {
        get { engine.encryption.map(DatabaseEncryption.init(store:)) }
        set { engine.encryption = newValue?.store }
    }

    /// A batch of more records than this is written in parts, each applied while the next is
    /// encoded (`BatchStream`). Internal: tests set it low, so that their batches need not be
    /// large.
    var batchPartRecords: Int {
        get { engine.batchPartRecords }
        set { engine.batchPartRecords = newValue }
    }

    /// The default configuration.
    public init() {}

    /// A configuration with the given values and defaults for the rest.
    public init(
        durability: Durability = .full, busyTimeout: Duration = .seconds(30), maximumMapSize: Int = 1 << 40,
        maxReaders: Int = 256, readOnly: Bool = false
    ) {
        self.durability = durability
        self.busyTimeout = busyTimeout
        self.maximumMapSize = maximumMapSize
        self.maxReaders = maxReaders
        self.readOnly = readOnly
    }

    /// The configuration an engine was opened with.
    init(_ engine: EngineConfiguration) {
        self.engine = engine
    }
}

import Foundation
import LocalLMDBLMDB
import LocalLMDBStore

/// The engine seam, its reading half: what the faces ask of an engine to read. GRDB's
/// `DatabaseReader` is the model: a few core operations here, the rest (`read(_:)`) in an
/// extension built on them, so a second engine (PostgreSQL) implements these and gets the
/// whole API of both faces.
///
/// Reads are values (`SnapshotRead`, `SessionRead`) written against `RecordSnapshot`, never
/// against an engine's own transactions, and every error is a `DatabaseError`. LMDB's engine
/// (`Session`) runs a read in a snapshot on the caller's thread, or in the session's open
/// transaction on its writer thread; an engine whose reads go over a network answers
/// `readOutsideTransaction` with nil and does the work in `readInTransaction`.
package protocol EngineReader: AnyObject, Sendable {
    /// Identifies the database for the per-thread caches (`ClassLookup.database`): unique for
    /// the life of the process, shared by the sessions of one database.
    var databaseSerial: UInt64 { get }
    /// The longest record or class-name key the engine stores as it is; longer ids are stored
    /// under a hash (`StorageKey`).
    var maxKeySize: Int { get }
    /// Where the engine announces commits (its own and, polled, other processes').
    var notifier: ChangeNotifier { get }
    /// Copies the database, as of its last commit, into the new directory `destination` while
    /// other tasks and processes read and write (`compact` leaves free pages out), telling
    /// `progress` as it goes. Returns once the copy is durable under its name; a copy that
    /// fails leaves no directory there. Never blocks a cooperative-pool thread.
    nonisolated(nonsending) func backup(to destination: URL, compact: Bool, progress: BackupListener?) async throws(DatabaseError)
    /// `backup`, blocking the calling thread.
    func backupBlocking(to destination: URL, compact: Bool, progress: BackupListener?) throws(DatabaseError)

    /// How the database uses its files (`localdb stats`); nil for an engine without local files.
    func storageStatistics() -> StorageStatistics?

    /// The reader slots in use, by any process, after freeing those of processes that are gone
    /// (`localdb readers`), and how many were freed; nil for an engine without them.
    func readerSlots(clearingStale: Bool) -> (slots: [ReaderSlotInfo], cleared: Int)?

    /// The encryption of values at rest: the faces seal each value they encode with it
    /// (`StoreEncryption.sealedValue`); nil for an unencrypted database.
    var encryption: StoreEncryption? { get }

    /// `read`'s value from a snapshot on the calling thread; nil when the read must go through
    /// `readInTransaction` (the session has a transaction open, or the engine cannot read
    /// without waiting). Synchronous, so the hot path costs no asynchronous call.
    func readOutsideTransaction<Read: SessionRead>(_ read: Read) throws(DatabaseError) -> Read.Value?

    /// `read`'s value: in the session's open transaction, behind its writes, or in a snapshot.
    nonisolated(nonsending) func readInTransaction<Read: SessionRead>(_ read: Read) async throws(DatabaseError) -> Read.Value

    /// `read`'s value, blocking the calling thread; `name` is the calling method's, for errors.
    func readBlocking<Read: SessionRead>(_ read: Read, _ name: String) throws(DatabaseError) -> Read.Value

    /// Whether a read may run now in a snapshot on the calling thread (`readRecord`); false
    /// when it must go through `readInTransaction` (the session has a transaction open, or the
    /// engine cannot read without waiting).
    func readsSnapshotOnCallersThread() throws(DatabaseError) -> Bool

    /// The hot path of a read by id, once `readsSnapshotOnCallersThread()` said yes: `restore`
    /// given the record stored under `key` (nil when there is none) and where to look up its
    /// classes, in a snapshot on the calling thread. (The two are separate calls, rather than
    /// one returning an optional, so the face's generic code builds no `T??` per read.) The
    /// session's state may change between the two (its transaction begun or ended on another
    /// task); the read then sees the committed state, as a read made just before would.
    func readRecord<Value>(
        _ key: StorageKey, id: String, _ restore: (DecodedRecord?, ClassLookup) throws(DatabaseError) -> Value
    ) throws(DatabaseError) -> Value

    /// The position after the last commit, blocking the calling thread (the public
    /// `changeToken()` is synchronous; LMDB's answer is a snapshot read, not a wait).
    func changeToken() throws(DatabaseError) -> LogPosition

    /// The commits after `token` (at most `limit`), from one snapshot, blocking the calling
    /// thread: for the public synchronous `changes(since:)`.
    func changeFeedBlocking(since token: LogPosition, limit: Int) throws(DatabaseError) -> LoggedCommits

    /// `changeFeedBlocking`, for the change sequences' asynchronous iterators: an engine whose
    /// reads wait (on a server) suspends here rather than blocking a pool thread.
    nonisolated(nonsending) func changeFeed(since token: LogPosition, limit: Int) async throws(DatabaseError) -> LoggedCommits

    /// `read`'s value and the change token, from one snapshot of the committed state: what an
    /// observation yields.
    nonisolated(nonsending) func readWithToken<Read: SnapshotRead>(_ read: Read) async throws(DatabaseError) -> (Read.Value, LogPosition)
}

extension EngineReader {
    /// `read`'s value, outside the session's transaction or in it: what every read of the
    /// asynchronous face does. Looping readers first give way, so they never hold up the
    /// library's resumed tasks (`PoolDemand`).
    @inlinable
    package nonisolated(nonsending) func read<Read: SessionRead>(_ read: Read) async throws(DatabaseError) -> Read.Value {
        await PoolDemand.giveWay()
        if let value = try readOutsideTransaction(read) { return value }
        return try await readInTransaction(read)
    }
}

/// A read of a snapshot, on the caller's thread.
@usableFromInline package protocol SnapshotRead<Value>: Sendable {
    associatedtype Value
    /// Inside a snapshot, on the caller's thread.
    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> Value
}

/// A read of models, as a face asks an engine to run it: either inside a snapshot on the
/// caller's thread, or inside the session's open transaction (where the engine runs it: for
/// LMDB, the writer thread), producing `Sendable` bytes that are then restored on the caller's
/// thread. A struct, so the generic read paths are specialized and allocate no closures.
@usableFromInline package protocol SessionRead: SnapshotRead {
    associatedtype Detached: Sendable
    /// Inside the session's open transaction.
    func inTransaction<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> Detached
    /// On the caller's thread, after `inTransaction`; nested classes are looked up in `classes`.
    func restore(_ detached: Detached, classes: ClassLookup) throws(DatabaseError) -> Value
}

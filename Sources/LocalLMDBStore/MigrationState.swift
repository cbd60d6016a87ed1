import LocalLMDBLMDB
import LocalLMDBJSON

/// Which migrations a database has had, and the one under way: the `migrations` entry of
/// `meta`. Its absence means none ever ran.
///
/// ```
/// byte 0          version: 1
/// varint          the number of completed migrations, then each name (varint length, UTF-8)
/// byte            1 when a migration is under way, then:
/// varint, bytes   its name
/// varint          the step it is at (from 0)
/// varint, bytes   where that step is (`position`: opaque to the store; empty at the step's start)
/// ```
///
/// Invariants, kept by `RecordStore.apply`:
/// - while the entry names a migration under way, records change only through `.migrate`,
///   which checks the recorded state and advances it in the same transaction: every other
///   write is refused (`migrationInProgress`), so no record is written around a migration;
/// - a write is refused (`unknownMigration`) by a process that does not know every migration
///   the entry names (`MigrationCatalog.known`): an older app never writes into a database a
///   newer one has migrated.
@usableFromInline package struct MigrationState: Sendable, Equatable {
    /// The migrations the database has had, in the order they completed.
    package var completed: [String]
    /// The migration under way, if any.
    package var running: Running?

    /// A migration under way: its name, its step, and where in that step it is.
    @usableFromInline package struct Running: Sendable, Equatable {
        package var name: String
        package var step: Int
        package var position: [UInt8]

        package init(name: String, step: Int, position: [UInt8]) {
            self.name = name
            self.step = step
            self.position = position
        }
    }

    static let metaKey = Array("migrations".utf8)
    static let version: UInt8 = 1

    package init(completed: [String] = [], running: Running? = nil) {
        self.completed = completed
        self.running = running
    }

    /// Every name the entry holds: the completed ones, and the one under way.
    package var names: [String] { completed + (running.map { [$0.name] } ?? []) }

    /// Parses a stored entry; nil when it is damaged or of an unknown version.
    package init?(parsing raw: UnsafeRawBufferPointer) {
        guard raw.count >= 3, raw[0] == Self.version else { return nil }
        var offset = 1
        guard let count = Varint.number(in: raw, at: &offset, maxShift: 35), count <= raw.count else { return nil }
        var completed: [String] = []
        completed.reserveCapacity(count)
        for _ in 0..<count {
            guard let name = Varint.lengthPrefixed(in: raw, at: &offset, maxShift: 35) else { return nil }
            completed.append(String(decoding: name, as: UTF8.self))
        }
        guard offset < raw.count else { return nil }
        let flag = raw[offset]
        offset += 1
        var running: Running?
        switch flag {
        case 0: break
        case 1:
            guard let name = Varint.lengthPrefixed(in: raw, at: &offset, maxShift: 35),
                  let step = Varint.number(in: raw, at: &offset, maxShift: 35),
                  let position = Varint.lengthPrefixed(in: raw, at: &offset, maxShift: 35) else { return nil }
            running = Running(name: String(decoding: name, as: UTF8.self), step: step, position: Array(position))
        default: return nil
        }
        guard offset == raw.count else { return nil }
        self.init(completed: completed, running: running)
    }

    /// The stored form.
    package var encoded: [UInt8] {
        var bytes: [UInt8] = [Self.version]
        Varint.append(completed.count, to: &bytes)
        for name in completed { Varint.append(lengthPrefixed: name, to: &bytes) }
        if let running {
            bytes.append(1)
            Varint.append(lengthPrefixed: running.name, to: &bytes)
            Varint.append(running.step, to: &bytes)
            running.position.withBytes { Varint.append(lengthPrefixed: $0, to: &bytes) }
        } else {
            bytes.append(0)
        }
        return bytes
    }
}

/// What this process knows of migrations, shared by every transaction of one store: the names
/// its migrator registers (nil until a migrator has run: then the process knows none), and the
/// last `migrations` entry found to allow its writes, so that a write compares bytes rather
/// than parsing the entry again. `generation` counts the changes of `known`: an entry allowed
/// under older names is never cached under newer ones.
package final class MigrationCatalog: Sendable {
    private struct State {
        var known: Set<String>?
        var generation = 0
        var allowed: [UInt8]?
    }

    private let state = Locked<State>(State())

    package init() {}

    /// The migrations this process knows (its migrator's), nil when it has run none.
    package var known: Set<String>? { state.withLock { $0.known } }

    /// Records the names of this process's migrator: from then on the process writes into a
    /// database that has had exactly these migrations (`RecordStore.checkMigrations`).
    package func know(_ names: Set<String>) {
        state.withLock { state in
            state.known = names
            state.generation += 1
            state.allowed = nil
        }
    }

    /// Refuses a write that changes records, other than a migration's own, into a database
    /// whose migration entry is `entry` (nil when it has none), unless the database has had
    /// exactly the migrations this process knows, none under way: a process that does not know
    /// one it has had (an older app: `unknownMigration`, or one whose migrator has not run:
    /// `migratorNotRun`) writes records of older shapes, and one that knows a migration the
    /// database has not had yet (`migrationPending`) writes records of newer shapes, which the
    /// migration would transform again. The rule of both engines (`RecordStore.checkMigrations`,
    /// the PostgreSQL engine's writes).
    package func checkWrite(into entry: UnsafeRawBufferPointer?) throws(DatabaseError) {
        guard let entry else {
            if let pending = known?.min() { throw .migrationPending(name: pending) }
            return
        }
        let (known, generation, allowed) = current(entry)
        if allowed { return }
        guard let state = MigrationState(parsing: entry) else {
            throw .corruptRecord(id: "meta \"migrations\"", reason: "the database's migration entry is damaged")
        }
        if let running = state.running { throw .migrationInProgress(name: running.name) }
        guard let known else {
            if let first = state.completed.first { throw .migratorNotRun(migration: first) }
            return
        }
        if let unknown = state.completed.first(where: { !known.contains($0) }) { throw .unknownMigration(name: unknown) }
        if let pending = known.subtracting(state.completed).min() { throw .migrationPending(name: pending) }
        allow(Array(entry), generation: generation)
    }

    /// Refuses a migration's batch (`.migrate`) that expects `expected` of a database whose
    /// recorded state is `recorded`: another migrator advanced it meanwhile
    /// (`migrationConflict`: `state` is the state the batch would record), or it names a
    /// migration this process does not know (`unknownMigration`). The rule of both engines.
    package func checkBatch(recorded: MigrationState, expected: MigrationState, state: MigrationState) throws(DatabaseError) {
        guard recorded == expected else {
            throw .migrationConflict(name: state.running?.name ?? expected.running?.name ?? state.completed.last ?? "")
        }
        let known = known ?? []
        if let unknown = recorded.names.first(where: { !known.contains($0) }) { throw .unknownMigration(name: unknown) }
    }

    private func current(_ entry: UnsafeRawBufferPointer) -> (known: Set<String>?, generation: Int, allowed: Bool) {
        state.withLock { ($0.known, $0.generation, $0.allowed.map { entry.elementsEqual($0) } ?? false) }
    }

    private func allow(_ entry: [UInt8], generation: Int) {
        state.withLock { if $0.generation == generation { $0.allowed = entry } }
    }
}

extension RecordStore {
    /// The layout of a database that has had a migration: an earlier version of LocalLMDB,
    /// which knows nothing of migrations and would write records of the old shapes into it,
    /// refuses it (`unsupportedFormat`).
    static let migratedLayoutVersion: UInt8 = 6

    /// The database's `migrations` entry; an empty state when it has none.
    /// - Throws: `corruptRecord` when it is damaged.
    package func migrationState(in transaction: Transaction) throws(DatabaseError) -> MigrationState {
        try MigrationState.metaKey.withBytes { key throws(DatabaseError) -> MigrationState in
            guard let bytes = try transaction.get(meta, key) else { return MigrationState() }
            guard let state = MigrationState(parsing: bytes) else {
                throw .corruptRecord(id: "meta \"migrations\"", reason: "the database's migration entry is damaged")
            }
            return state
        }
    }

    /// Refuses a write that changes records, other than a migration's own, unless the database
    /// has had exactly the migrations this process knows (`MigrationCatalog.checkWrite`).
    func checkMigrations(in transaction: Transaction) throws(DatabaseError) {
        try MigrationState.metaKey.withBytes { key throws(DatabaseError) in
            try migrations.checkWrite(into: try transaction.get(meta, key))
        }
    }

    /// Applies a batch of a migration (`.migrate`): checks that the recorded state is
    /// `expected`, applies `operations` (none of them a migration or a replication), and records
    /// `state`, all in `transaction`. The first batch of a migration expects the state without
    /// it; its last records the migration completed. A database that has had a migration gets
    /// the layout older versions refuse.
    /// - Throws: `migrationConflict` when the recorded state is not `expected` (another process
    ///   migrated meanwhile: nothing is written); `readOnlyReplica` on a replica; as each
    ///   operation throws.
    func migrate(
        _ operations: [WriteOperation], expected: MigrationState, state: MigrationState, in transaction: Transaction, changes: inout ChangeSet
    ) throws(DatabaseError) -> Int {
        try checkNotReplica(in: transaction)
        try migrations.checkBatch(recorded: try migrationState(in: transaction), expected: expected, state: state)
        var count = 0
        for operation in operations {
            assert(!operation.isReplication && !operation.isMigration, "a migration's batch holds plain writes")
            count += try applyUnchecked(operation, in: transaction, changes: &changes)
        }
        try Self.write(state.encoded, at: MigrationState.metaKey, meta, in: transaction)
        let layout = try Self.read(Array("format".utf8), meta, in: transaction)?.first ?? 0
        if layout < Self.migratedLayoutVersion {
            try Self.write([Self.migratedLayoutVersion], at: Array("format".utf8), meta, in: transaction)
        }
        return count
    }
}

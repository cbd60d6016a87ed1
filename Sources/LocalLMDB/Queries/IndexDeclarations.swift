import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// Stores the indexes a model type declares, the first time a database writes or queries the
/// type in this process (for its current and legacy class names): a definition already stored
/// is left as it is, a new one is built from the records there, in one write transaction.
///
/// Remembered per database and type once committed (not while the database has a transaction
/// open: a rollback undoes the definition, and the next use stores it again). A database
/// opened read-only cannot store them: its queries read every record instead.
enum IndexDeclarations {
    private struct Key: Hashable {
        let database: UInt64
        let type: ObjectIdentifier
    }

    private static let stored = Locked<Set<Key>>([])

    /// The index of a `Syncable` type's status.
    static let syncStatusIndex = IndexDefinition(fields: [.init(path: ["syncStatus"], kind: .automatic)], isUnique: false, isMultiEntry: false)

    /// The indexes of `T`: those it declares, and for a `Syncable` type its status's.
    static func declared<T: Persistable>(_ type: T.Type) -> [IndexDefinition] {
        let declared = T.indexes.map(\.definition)
        guard type is any Syncable.Type, !declared.contains(syncStatusIndex) else { return declared }
        return declared + [syncStatusIndex]
    }

    private static let plannings = Locked<[ObjectIdentifier: QueryPlan.Declared]>([:])

    /// `declared(T)` as planning reads it, worked out the first time (a type's `indexes` are
    /// fixed for the process, as `ensure` assumes too).
    static func planning<T: Persistable>(_ type: T.Type) -> QueryPlan.Declared {
        let id = ObjectIdentifier(type)
        if let known = plannings.withLock({ $0[id] }) { return known }
        let planning = QueryPlan.Declared(declared(type))
        plannings.withLock { $0[id] = planning }
        return planning
    }

    /// The operations that store `T`'s indexes; none when they are stored or it declares none.
    /// - Throws: `invalidQuery` when an index `T` declares cannot be stored (`Index.problem`).
    private static func pending<T: Persistable>(
        _ type: T.Type, _ engine: FaceEngine, progress: IndexBuildListener? = nil
    ) throws(DatabaseError) -> (Key, [WriteOperation])? {
        guard !T.indexes.isEmpty || type is any Syncable.Type else { return nil }
        let key = Key(database: engine.databaseSerial, type: ObjectIdentifier(type))
        if progress == nil, stored.withLock({ $0.contains(key) }) { return nil }
        if let problem = T.indexes.lazy.compactMap(\.problem).first {
            throw .invalidQuery(reason: "an index of \(T.self) cannot be stored: \(problem)")
        }
        let definitions = declared(type)
        return (key, RecordEncoding.classNames(type).map { WriteOperation.defineIndexes(className: $0, definitions, progress: progress) })
    }

    /// `ensure`, telling `progress` of each index built (even when this process stored them before).
    nonisolated(nonsending) static func prepare<T: Persistable>(_ type: T.Type, in engine: FaceEngine, progress: @escaping IndexBuildListener) async throws(DatabaseError) {
        guard let (key, operations) = try pending(type, engine, progress: progress) else { return }
        for operation in operations { _ = try await engine.perform(operation) }
        remember(key, engine)
    }

    /// Forgets that a type's indexes are stored in the database (one was dropped): its next use
    /// stores them again.
    static func forget(_ type: ObjectIdentifier, in engine: FaceEngine) {
        let key = Key(database: engine.databaseSerial, type: type)
        _ = stored.withLock { $0.remove(key) }
    }

    /// What `prepare` needs of a type, worked out from it beforehand: for a migration step,
    /// which keeps values, not the type.
    struct Preparation: Sendable {
        let type: ObjectIdentifier
        let problem: String?
        let classNames: [String]
        let definitions: [IndexDefinition]
    }

    static func preparation<T: Persistable>(of type: T.Type) -> Preparation {
        Preparation(
            type: ObjectIdentifier(type),
            problem: T.indexes.lazy.compactMap(\.problem).first.map { "an index of \(T.self) cannot be stored: \($0)" },
            classNames: RecordEncoding.classNames(type), definitions: declared(type))
    }

    /// `prepare` from a `Preparation`: stores the indexes and builds each new one now.
    nonisolated(nonsending) static func prepare(_ preparation: Preparation, in engine: FaceEngine) async throws(DatabaseError) {
        if let problem = preparation.problem { throw .invalidQuery(reason: problem) }
        guard !preparation.definitions.isEmpty else { return }
        for className in preparation.classNames {
            _ = try await engine.perform(.defineIndexes(className: className, preparation.definitions, progress: { _, _, _, _ in }))
        }
        remember(Key(database: engine.databaseSerial, type: preparation.type), engine)
    }

    /// The removal of `index` of `T` (under its current and legacy class names), worked out from
    /// the type beforehand (a migration step keeps values, not the type).
    struct Dropping: Sendable {
        let type: ObjectIdentifier
        let operations: [WriteOperation]

        init<T: Persistable>(_ index: Index, of type: T.Type) {
            self.type = ObjectIdentifier(type)
            operations = RecordEncoding.classNames(type).map { WriteOperation.dropIndex(className: $0, name: index.definition.name) }
        }
    }

    /// Removes what `dropping` names, and forgets that its type's indexes are stored (its next
    /// use stores them again). Returns whether an index was stored.
    nonisolated(nonsending) static func drop(_ dropping: Dropping, in engine: FaceEngine) async throws(DatabaseError) -> Bool {
        var dropped = 0
        for operation in dropping.operations { dropped += try await engine.perform(operation) }
        forget(dropping.type, in: engine)
        return dropped > 0
    }

    /// `drop`, blocking the calling thread (the synchronous face).
    static func dropBlocking(_ dropping: Dropping, in engine: FaceEngine) throws(DatabaseError) -> Bool {
        var dropped = 0
        for operation in dropping.operations { dropped += try engine.performBlocking(operation, "dropIndex") }
        forget(dropping.type, in: engine)
        return dropped > 0
    }

    private static func remember(_ key: Key, _ engine: FaceEngine) {
        if !engine.transactionActive { stored.withLock { _ = $0.insert(key) } }
    }

    nonisolated(nonsending) static func ensure<T: Persistable>(_ type: T.Type, in engine: FaceEngine) async throws(DatabaseError) {
        guard let (key, operations) = try pending(type, engine) else { return }
        do {
            for operation in operations { _ = try await engine.perform(operation) }
        } catch .readOnly {
            // Queries of a read-only database read every record.
        }
        remember(key, engine)
    }

    static func ensureBlocking<T: Persistable>(_ type: T.Type, in engine: FaceEngine, _ name: String) throws(DatabaseError) {
        guard let (key, operations) = try pending(type, engine) else { return }
        do {
            for operation in operations { _ = try engine.performBlocking(operation, name) }
        } catch .readOnly {
            // Queries of a read-only database read every record.
        }
        remember(key, engine)
    }
}

import LocalLMDBStore

/// Named migrations, registered in order, that change stored records when models change shape:
/// each runs once per database, recorded in it, whichever process runs the migrator first.
///
/// ```swift
/// var migrator = DatabaseMigrator()
/// migrator.registerMigration("split names", steps: [
///     .transform("User") { record in
///         let full: String = record.document.get("name") ?? ""
///         let parts = full.split(separator: " ", maxSplits: 1).map(String.init)
///         return .replace(with: User(first: parts.first ?? "", last: parts.count > 1 ? parts[1] : ""))
///     },
/// ])
/// migrator.registerMigration("rename Customer", steps: [.renameClass("Customer", to: "Client")])
/// try await database.migrate(with: migrator)
/// ```
///
/// The rules (<doc:Migrations>):
/// - A migration runs once: the database records its name in the commit of its last batch.
///   Registered names must be unique and non-empty; their order is the order they run in.
/// - A database that has had a migration the migrator does not register (a newer app ran) is
///   not migrated and takes no writes from this process: `unknownMigration`.
/// - Until `migrate(with:)` has run, a process writes nothing into a database that has had
///   migrations: an app that does not know them is an older app.
public struct DatabaseMigrator: Sendable {
    struct Migration: Sendable {
        let name: String
        let batchSize: Int
        /// The steps' units (a walk per class name, or an action), in order: the step a
        /// database records is an index in this list.
        let units: [MigrationStep.Unit]
    }

    private(set) var migrations: [Migration] = []
    /// The first registration that cannot be run (an empty or repeated name): `migrate` throws it.
    private(set) var problem: String?

    /// An empty migrator.
    public init() {}

    /// The registered migrations' names, in the order they run.
    public var migrationNames: [String] { migrations.map(\.name) }

    /// Registers the migration `name`, to run after those registered before it.
    /// - Parameters:
    ///   - name: Its name, recorded in the database once it has run: never rename a migration
    ///     that has shipped. Non-empty, and unique in the migrator (else `migrate` throws
    ///     `invalidMigration` and runs nothing).
    ///   - batchSize: Records a transaction of a step transforms (at least 1). A step over
    ///     more records commits in batches, recording its position in each: a process killed
    ///     half-way goes on from there. Readers see each batch as it commits.
    ///   - steps: What it does, in order.
    public mutating func registerMigration(_ name: String, batchSize: Int = 1000, steps: [MigrationStep]) {
        if problem == nil {
            if name.isEmpty { problem = "a migration's name must not be empty" }
            else if migrations.contains(where: { $0.name == name }) { problem = "the migration '\(name)' is registered twice" }
        }
        migrations.append(Migration(name: name, batchSize: max(1, batchSize), units: steps.flatMap(\.units)))
    }
}

/// One step of a migration: a change to the records of one class, in batches.
public struct MigrationStep: Sendable {
    /// One class name a step walks, and what it does to each record.
    struct Walk: Sendable {
        let className: String
        let transform: MigrationTransform
    }

    /// What a step does once, not record by record: it returns the writes to commit with the
    /// step's completion (`custom`), or makes its own changes, which may be made again
    /// (the index steps).
    struct Action: Sendable {
        let run: @Sendable (LocalDatabase) async throws -> [WriteOperation]
    }

    /// One unit of a step, recorded as one step of its migration.
    enum Unit: Sendable {
        case walk(Walk)
        case action(Action)
    }

    /// The units, in order (a type's current name, then its `Legacy` names; or one action).
    let units: [Unit]

    init(walks: [Walk]) { units = walks.map(Unit.walk) }
    init(action: Action) { units = [.action(action)] }

    /// Transforms each record stored under `className` (its current name), once: `body` is given
    /// the stored document and returns what to store in its place (`MigrationResult`). The old
    /// shape needs no Swift type: read it through the document's `get`.
    ///
    /// `body` runs on the task that called `migrate(with:)`. It may store records of
    /// `className` under the record's own id only (a new record of the class it walks could be
    /// walked again: transform into another class, then rename it, to split records of one
    /// class), and records of other classes under any id that holds no record of `className`
    /// (which would be lost to the walk); the models references hold count too. Ids are
    /// compared by their bytes. When `body` throws, or returns what breaks these rules, the
    /// batch is rolled back and `migrate` throws `migrationFailed`, naming the record.
    public static func transform(
        _ className: String, _ body: @escaping @Sendable (MigratingRecord) throws -> MigrationResult
    ) -> MigrationStep {
        MigrationStep(walks: [Walk(className: className, transform: MigrationTransform(body))])
    }

    /// Transforms each record stored as `type`: under its stored class name, then under each of
    /// its `Legacy` names (a record `body` stores as `type` lands under the current name, which
    /// is walked first, so it is never transformed twice). For a type that still exists.
    public static func transform<T: Persistable>(
        _ type: T.Type, _ body: @escaping @Sendable (MigratingRecord) throws -> MigrationResult
    ) -> MigrationStep {
        let transform = MigrationTransform(body)
        return MigrationStep(walks: Legacy.allNames(of: TypeRegistry.name(of: type)).map { Walk(className: $0, transform: transform) })
    }

    /// Stores every record of the class `oldName` as `newName` for good, rewriting each record
    /// (so the `Legacy` names kept to read them can be retired). Their ids, fields, and the
    /// indexes declared for `newName` are kept up to date as for any write.
    public static func renameClass(_ oldName: String, to newName: String) -> MigrationStep {
        transform(oldName) { record in
            record.document.setClassName(newName)
            return .replace(with: record.document)
        }
    }

    /// Renames the field `oldKey` to `newKey` in every record of the class `className`, for
    /// good (so `legacyKeys` can be retired); records without `oldKey` are left as they are.
    public static func renameField(_ oldKey: String, to newKey: String, in className: String) -> MigrationStep {
        transform(className) { record in
            record.document.renameField(oldKey, to: newKey) ? .replace(with: record.document) : .keep
        }
    }

    /// Deletes every record of the class `className`, in batches.
    public static func deleteClass(_ className: String) -> MigrationStep {
        transform(className) { _ in .delete }
    }

    /// Runs `body` once, with the database to read and a buffer of writes, which are committed
    /// in one transaction with the step's completion: a migrator killed before that commit runs
    /// `body` again, and none of its writes was made; after it, none is made twice.
    ///
    /// `body` reads the database as it stands (the migration's earlier steps included, not the
    /// writes it has buffered); the database takes no other writes while the migration is
    /// under way (`migrationInProgress`), so write through `writes` only. Its writes are held
    /// in memory until the commit: for changes to every record of a class, `transform` commits
    /// in batches instead. When `body` throws, or a write cannot be stored, nothing is written
    /// and `migrate` throws `migrationFailed` (with an empty id).
    public static func custom(
        _ body: @escaping @Sendable (_ database: LocalDatabase, _ writes: MigrationWrites) async throws -> Void
    ) -> MigrationStep {
        MigrationStep(action: Action { database in
            let writes = MigrationWrites(maxKeySize: database.engine.maxKeySize, encryption: database.engine.encryption)
            try await body(database, writes)
            // The indexes the written models declare, as a write of them would store them.
            for type in writes.types.values { try await IndexDeclarations.ensure(type, in: database.engine) }
            return writes.operations()
        })
    }

    /// Builds the indexes `type` declares now, from the records stored, rather than at the first
    /// write or query after the migration (`LocalDatabase.prepareIndexes(of:progress:)`). Run
    /// again after a kill, it builds only what is not yet built.
    public static func prepareIndexes<T: Persistable>(of type: T.Type) -> MigrationStep {
        let preparation = IndexDeclarations.preparation(of: type)
        return MigrationStep(action: Action { database in
            try await IndexDeclarations.prepare(preparation, in: database.engine)
            return []
        })
    }

    /// Removes the stored index `index` of `type` and its entries (`LocalDatabase.dropIndex`),
    /// such as a unique index the new model no longer declares. Run again after a kill, it
    /// finds nothing to remove.
    public static func dropIndex<T: Persistable>(_ index: Index, of type: T.Type) -> MigrationStep {
        let dropping = IndexDeclarations.Dropping(index, of: type)
        return MigrationStep(action: Action { database in
            _ = try await IndexDeclarations.drop(dropping, in: database.engine)
            return []
        })
    }

    /// Seals every record afresh under the database's current key, and retires the older keys
    /// (`LocalDatabase.reencrypt(batchSize:progress:)`): a key rotation, or the encryption of a
    /// database opened with `encryptingExistingValues`, made part of a version's migration. It
    /// commits its own batches; a migrator killed during it runs it again, which only reads the
    /// records already sealed under the current key. Refused on an unencrypted database
    /// (`encryptionRequired`, which fails the migration).
    public static func reencrypt(batchSize: Int = 1000) -> MigrationStep {
        MigrationStep(action: Action { database in
            _ = try await database.reencrypt(batchSize: batchSize)
            return []
        })
    }
}

/// A step's function, boxed so that `MigrationStep` stays a plain value.
struct MigrationTransform: Sendable {
    let body: @Sendable (MigratingRecord) throws -> MigrationResult
    init(_ body: @escaping @Sendable (MigratingRecord) throws -> MigrationResult) { self.body = body }
}

/// A record a migration step is given: its id, its stored class name, and its document.
public struct MigratingRecord {
    /// The record's id.
    public let id: String
    /// The class name it is stored under.
    public let className: String
    /// The stored document, to read (`get`) and to change in place (`add`, `renameField`,
    /// `removeField`) before returning it with `MigrationResult.replace(with:)`.
    public let document: DataObject

    /// The stored document read as `type`, the old shape's model (as a read of `type` would
    /// read it: `Storable`'s `init(dataObject:)`, or `Decodable`'s coding).
    /// - Throws: What reading it as `type` throws (a member `type` needs is missing, say): the
    ///   step's error, which rolls its batch back.
    public func decode<T: Persistable>(_ type: T.Type = T.self) throws -> T {
        try T._restore(from: document)
    }
}

/// What a migration step stores in place of a record.
public struct MigrationResult {
    enum Kind {
        case keep
        case delete
        case records([MigratedRecord])
    }

    let kind: Kind

    /// The record stays as it is (nothing is written).
    public static var keep: MigrationResult { MigrationResult(kind: .keep) }
    /// The record is deleted.
    public static var delete: MigrationResult { MigrationResult(kind: .delete) }

    /// The record is stored as `model`, under its id (as the model's class).
    public static func replace<T: Persistable>(with model: T) -> MigrationResult {
        MigrationResult(kind: .records([MigratedRecord(model: model, id: nil)]))
    }

    /// The record is stored as `document`, under its id, as the class the document names (its
    /// own, unless changed).
    public static func replace(with document: DataObject) -> MigrationResult {
        MigrationResult(kind: .records([MigratedRecord(document: document, id: nil)]))
    }

    /// The record is replaced by `records`: it is deleted, unless one of them has its id, and
    /// each is stored (as `write(contentsOf:)` stores records).
    public static func records(_ records: [MigratedRecord]) -> MigrationResult {
        MigrationResult(kind: .records(records))
    }
}

/// A record a migration step stores: a model, or a document, and its id.
public struct MigratedRecord {
    enum Content {
        case model(any Persistable)
        case document(DataObject)
    }

    let content: Content
    /// Nil: the migrated record's own id.
    let id: String?

    /// `model` under `id`.
    public init<T: Persistable>(id: String, model: T) {
        self.init(model: model, id: id)
    }

    /// `document` under `id`, as the class the document names.
    public init(id: String, document: DataObject) {
        self.init(document: document, id: id)
    }

    init(model: any Persistable, id: String?) {
        content = .model(model)
        self.id = id
    }

    init(document: DataObject, id: String?) {
        content = .document(document)
        self.id = id
    }
}

/// How far `migrate(with:)` has come, told after each batch.
public struct MigrationProgress: Sendable, Equatable {
    /// The migration running.
    public let migration: String
    /// Its step (from 0), and how many it has: a step that walks several class names (a type
    /// with `Legacy` names) counts one per name.
    public let step: Int
    /// How many steps the migration has (counted as `step` counts them).
    public let stepCount: Int
    /// The records this call has visited in the step, and written (or deleted) in it.
    public let recordsVisited: Int
    public let recordsWritten: Int
}

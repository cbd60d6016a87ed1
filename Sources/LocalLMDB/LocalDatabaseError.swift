import LocalLMDBLMDB
import Foundation

/// Every error LocalLMDB throws.
///
/// Each case carries the context needed to act on it: the record id, the type names involved,
/// or LMDB's own code and message. Stored data is never changed by an operation that throws.
public enum LocalDatabaseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A record id was empty. Ids are one or more bytes of UTF-8.
    case emptyID
    /// The database directory could not be created or used.
    case invalidDirectory(path: String, reason: String)
    /// The directory is already open in this process with different options.
    case incompatibleOptions(path: String, reason: String)
    /// The files were written by a newer, unknown storage format.
    case unsupportedFormat(found: Int, supported: Int)
    /// LMDB reported an error. `code` is LMDB's (or the system's) error number.
    case storage(operation: String, code: Int32, message: String)
    /// The record stored under `id` is of a class that is neither the requested one nor a subclass of it.
    case typeMismatch(id: String, requested: String, stored: String)
    /// The bytes stored under `id` could not be decoded.
    case corruptRecord(id: String, reason: String)
    /// A JSON document could not be parsed.
    case invalidJSON(reason: String, offset: Int)
    /// `startTransaction(override: false)` was called while this database has a transaction open.
    case transactionAlreadyActive
    /// `commitTransaction()` or `rollbackTransaction()` was called with no transaction open.
    case noActiveTransaction
    /// An LMDB write transaction was reached from a thread other than the one that began it.
    /// This indicates a bug in LocalLMDB, reported as an error rather than a hang.
    case wrongThread(operation: String)
    /// Two Swift types would be stored under one class name `name`: `storedBy` owns it in this
    /// database, `requestedBy` tried to write, read, count or delete under it. Give one of them
    /// its own name with `StoredClasses.register(_:as:)`; or, when `storedBy` is `requestedBy`
    /// moved to another module or renamed, adopt the name with `StoredClasses.register(_:)`.
    case classNameConflict(name: String, storedBy: String, requestedBy: String)
    /// The record `id` (or an object nested in it) is stored as class `className`, which this
    /// process cannot find. Restoring it as another class would lose its fields, so the read
    /// fails; register the class with `StoredClasses.register(_:)` (for example after moving
    /// it to another module), or map an old name with `Legacy.addClassRefactor(old:new:)`.
    case unresolvableClass(id: String, className: String)
    /// `StoredClasses.register` was refused.
    case classRegistration(type: String, reason: String)
    /// Waited `timeout` for another database's transaction on the same directory to end.
    case busy(timeout: Duration)
    /// The transaction failed (`reason`) and was not rolled back yet: its writes, reads and
    /// commit are refused until `rollbackTransaction()`. None of its changes will be kept.
    case transactionFailed(reason: String)
    /// The database was closed with `close()`.
    case closed
    /// The database was opened read-only (`DatabaseConfiguration.readOnly`).
    case readOnly
    /// A synchronous call would wait for itself: made on the database's writer thread, or from
    /// inside a model's `init(dataObject:)` while a read of the same database restores it.
    case wouldDeadlock(operation: String, reason: String)
    /// The record `id` holds a value that cannot be stored, at `path` (`address.visits[2]`):
    /// a date that is not finite or more than 2^63 seconds from 1970, or objects and arrays
    /// nested deeper than 512 levels (the most any reader accepts), or more deeply than the
    /// encoding thread's stack can hold. Nothing is written.
    case unencodableValue(id: String, path: String, reason: String)
    /// The record `id`, stored as class `className`, could not be decoded as a `Decodable` model:
    /// at `path` (the coding path, `address.visits[2]`), a field is missing, `null` or of another
    /// type (`reason` says which), or the model's own `init(from:)` threw. Also, for any model,
    /// when its values are nested more deeply than the reading thread's stack can hold (an
    /// unoptimized build takes several times the stack of an optimized one). Nothing is changed.
    case decodingFailed(id: String, className: String, path: String, reason: String)
    /// `ModelFactory` could not build the element at `index` of a JSON array (or the document,
    /// index 0): at `path`, a field is missing, `null` or mistyped, as `reason` says.
    case invalidElement(index: Int, path: String, reason: String)
    /// The changes after `token` cannot be given (`reason` says why: they were trimmed from the
    /// change log, or the token belongs to another database). Resynchronize from the current
    /// state (`read()`), then follow `changeToken()` from there.
    case changesUnavailable(token: String, reason: String)
    /// Two records of `className` (the first of `ids` stored, the second being written) have
    /// the same value in the unique index `index` (its fields, spelt out). Nothing of the write
    /// or batch, or of the index definition, was stored.
    case uniqueIndexViolation(className: String, index: String, ids: [String])
    /// The query names no field, a field twice in ways that cannot be combined, or a value that
    /// cannot be compared (`reason` says which). Nothing was read.
    case invalidQuery(reason: String)
    /// The database is encrypted, and was opened without encryption: open it with its cipher
    /// (`DatabaseConfiguration.encryption`). Nothing was read or written.
    case encryptionRequired(path: String)
    /// The database is not encrypted and holds records, and was opened with encryption. To
    /// encrypt it in place, open it with `DatabaseEncryption(_:encryptingExistingValues:)` set
    /// to true, then call `reencrypt(progress:)`; else open it without encryption.
    case unencryptedDatabase(path: String)
    /// Values of the database may be sealed under the key `keyID`, which the cipher does not
    /// hold. Open it with that key among the cipher's keys (a key is retired only once
    /// `reencrypt(progress:)` has finished under its successor).
    case missingEncryptionKey(keyID: String)
    /// The cipher's key of id `keyID` is not the key the database's values are sealed under
    /// (its key check, written when the key was first used, does not open). Nothing was read.
    case wrongEncryptionKey(keyID: String)
    /// The stored value of record `id` does not decrypt: it was changed on disk, moved from
    /// another record or class, sealed under a key the database was not opened with, or is
    /// unencrypted in an encrypted database (`reason` says which). Other records are unaffected.
    case undecryptableRecord(id: String, reason: String)
    /// The cipher failed to seal the value of record `id` (empty for a key check), or the
    /// write of record `id` (the first of its batch) was refused because this process seals
    /// under a key another process's re-encryption has retired; `reason` says which. Nothing of
    /// the write was stored.
    case encryptionFailed(id: String, reason: String)
    /// An export of an encrypted database was asked for without `decrypting: true`: it would
    /// write the values in the clear. Nothing was written.
    case exportWouldDecrypt(path: String)
    /// Line `line` of an import is not a record (`reason` says why: invalid JSON, a repeated
    /// key, a missing or empty `id` or `class`, a `value` that is not an object, a line too
    /// long, an id already on an earlier line). Every line up to `linesCommitted` is stored (by transactions that committed);
    /// none of the batch holding the bad line is. Import from line `linesCommitted + 1` to go on.
    case invalidLine(line: Int, reason: String, linesCommitted: Int)
    /// The record `id` holds a non-optional `Reference` at `field` (its coding path) to the
    /// record `referencedID`, which is not stored (it was deleted, or never written). Nothing is
    /// changed. Declare the property optional (`Reference<T>?`) to read such a reference as nil.
    case missingReference(id: String, field: String, referencedID: String)

    /// A database server (PostgreSQL) failed to run `operation`, or could not be reached:
    /// `message` is its answer, or what went wrong with the connection. A write that fails so
    /// may or may not have committed when the connection was lost after it was sent; a write
    /// that the server refused changed nothing.
    case server(operation: String, message: String)

    /// `operation` is not available on this database's engine (`reason` says why, and what to
    /// use instead). Nothing is changed.
    case unsupported(operation: String, reason: String)

    /// The database is a read replica of `source` (a pull replicator follows it): its records
    /// change only as the source's do. Write to the source, or detach the replica to make its
    /// records its own. Nothing is changed.
    case readOnlyReplica(source: String)

    /// The database has had the migration `name`, which this process's migrator does not
    /// register: a newer version of the app migrated it. This process reads it; every write that
    /// changes records is refused, and nothing is changed (see <doc:Migrations>).
    case unknownMigration(name: String)

    /// The migration `name` is under way (another process runs it, or one was killed while
    /// running it): until it ends, only the migration changes records. Run the migrator, which
    /// waits for it or finishes it. Nothing is changed.
    case migrationInProgress(name: String)

    /// Another process changed the database's migrations while `name` ran (two migrators at
    /// once): nothing of the batch was written. Run the migrator again.
    case migrationConflict(name: String)

    /// The migration `name` failed at the record `id` (`reason`: the step's error). Nothing of
    /// that batch was written; the batches before it stay, and the migrator goes on from there
    /// when run again.
    case migrationFailed(name: String, id: String, reason: String)

    /// The migrator cannot run (`reason`: an empty or repeated migration name, a migration
    /// that cannot be resumed as recorded). Nothing is migrated.
    case invalidMigration(reason: String)

    /// This process's migrator registers the migration `name`, which the database has not had
    /// yet: run the migrator before writing (a record of the new shape written before the
    /// migration would be transformed by it). Nothing is changed.
    case migrationPending(name: String)

    /// The database has had the migration `migration`, and this process has run no migrator: it
    /// writes into the database only once it has run one that registers every migration the
    /// database has had (`LocalDatabase.migrate(with:)`). Nothing is changed. A process that
    /// cannot run one (an older app, the `localdb` tool) reads only.
    case migratorNotRun(migration: String)

    /// A sentence describing the error, with its context.
    public var description: String { DatabaseError(self).description }
}

extension LocalDatabaseError {
    /// The public form of an error of the layers below (same case, same values).
    package init(_ error: DatabaseError) {
        switch error {
        case .emptyID: self = .emptyID
        case let .invalidDirectory(path, reason): self = .invalidDirectory(path: path, reason: reason)
        case let .incompatibleOptions(path, reason): self = .incompatibleOptions(path: path, reason: reason)
        case let .unsupportedFormat(found, supported): self = .unsupportedFormat(found: found, supported: supported)
        case let .storage(operation, code, message): self = .storage(operation: operation, code: code, message: message)
        case let .typeMismatch(id, requested, stored): self = .typeMismatch(id: id, requested: requested, stored: stored)
        case let .corruptRecord(id, reason): self = .corruptRecord(id: id, reason: reason)
        case let .invalidJSON(reason, offset): self = .invalidJSON(reason: reason, offset: offset)
        case .transactionAlreadyActive: self = .transactionAlreadyActive
        case .noActiveTransaction: self = .noActiveTransaction
        case let .wrongThread(operation): self = .wrongThread(operation: operation)
        case let .classNameConflict(name, storedBy, requestedBy): self = .classNameConflict(name: name, storedBy: storedBy, requestedBy: requestedBy)
        case let .unresolvableClass(id, className): self = .unresolvableClass(id: id, className: className)
        case let .classRegistration(type, reason): self = .classRegistration(type: type, reason: reason)
        case let .busy(timeout): self = .busy(timeout: timeout)
        case let .transactionFailed(reason): self = .transactionFailed(reason: reason)
        case .closed: self = .closed
        case .readOnly: self = .readOnly
        case let .wouldDeadlock(operation, reason): self = .wouldDeadlock(operation: operation, reason: reason)
        case let .unencodableValue(id, path, reason): self = .unencodableValue(id: id, path: path, reason: reason)
        case let .decodingFailed(id, className, path, reason): self = .decodingFailed(id: id, className: className, path: path, reason: reason)
        case let .invalidElement(index, path, reason): self = .invalidElement(index: index, path: path, reason: reason)
        case let .changesUnavailable(token, reason): self = .changesUnavailable(token: token, reason: reason)
        case let .uniqueIndexViolation(className, index, ids): self = .uniqueIndexViolation(className: className, index: index, ids: ids)
        case let .invalidQuery(reason): self = .invalidQuery(reason: reason)
        case let .encryptionRequired(path): self = .encryptionRequired(path: path)
        case let .unencryptedDatabase(path): self = .unencryptedDatabase(path: path)
        case let .missingEncryptionKey(keyID): self = .missingEncryptionKey(keyID: keyID)
        case let .wrongEncryptionKey(keyID): self = .wrongEncryptionKey(keyID: keyID)
        case let .undecryptableRecord(id, reason): self = .undecryptableRecord(id: id, reason: reason)
        case let .encryptionFailed(id, reason): self = .encryptionFailed(id: id, reason: reason)
        case let .exportWouldDecrypt(path): self = .exportWouldDecrypt(path: path)
        case let .invalidLine(line, reason, linesCommitted): self = .invalidLine(line: line, reason: reason, linesCommitted: linesCommitted)
        case let .missingReference(id, field, referencedID): self = .missingReference(id: id, field: field, referencedID: referencedID)
        case let .server(operation, message): self = .server(operation: operation, message: message)
        case let .unsupported(operation, reason): self = .unsupported(operation: operation, reason: reason)
        case let .readOnlyReplica(source): self = .readOnlyReplica(source: source)
        case let .unknownMigration(name): self = .unknownMigration(name: name)
        case let .migrationInProgress(name): self = .migrationInProgress(name: name)
        case let .migrationConflict(name): self = .migrationConflict(name: name)
        case let .migrationFailed(name, id, reason): self = .migrationFailed(name: name, id: id, reason: reason)
        case let .invalidMigration(reason): self = .invalidMigration(reason: reason)
        case let .migrationPending(name): self = .migrationPending(name: name)
        case let .migratorNotRun(migration): self = .migratorNotRun(migration: migration)
        }
    }
}

extension DatabaseError {
    /// The lower layers' form of a public error (same case, same values), for errors of models
    /// and faces that pass back through the engine.
    package init(_ error: LocalDatabaseError) {
        switch error {
        case .emptyID: self = .emptyID
        case let .invalidDirectory(path, reason): self = .invalidDirectory(path: path, reason: reason)
        case let .incompatibleOptions(path, reason): self = .incompatibleOptions(path: path, reason: reason)
        case let .unsupportedFormat(found, supported): self = .unsupportedFormat(found: found, supported: supported)
        case let .storage(operation, code, message): self = .storage(operation: operation, code: code, message: message)
        case let .typeMismatch(id, requested, stored): self = .typeMismatch(id: id, requested: requested, stored: stored)
        case let .corruptRecord(id, reason): self = .corruptRecord(id: id, reason: reason)
        case let .invalidJSON(reason, offset): self = .invalidJSON(reason: reason, offset: offset)
        case .transactionAlreadyActive: self = .transactionAlreadyActive
        case .noActiveTransaction: self = .noActiveTransaction
        case let .wrongThread(operation): self = .wrongThread(operation: operation)
        case let .classNameConflict(name, storedBy, requestedBy): self = .classNameConflict(name: name, storedBy: storedBy, requestedBy: requestedBy)
        case let .unresolvableClass(id, className): self = .unresolvableClass(id: id, className: className)
        case let .classRegistration(type, reason): self = .classRegistration(type: type, reason: reason)
        case let .busy(timeout): self = .busy(timeout: timeout)
        case let .transactionFailed(reason): self = .transactionFailed(reason: reason)
        case .closed: self = .closed
        case .readOnly: self = .readOnly
        case let .wouldDeadlock(operation, reason): self = .wouldDeadlock(operation: operation, reason: reason)
        case let .unencodableValue(id, path, reason): self = .unencodableValue(id: id, path: path, reason: reason)
        case let .decodingFailed(id, className, path, reason): self = .decodingFailed(id: id, className: className, path: path, reason: reason)
        case let .invalidElement(index, path, reason): self = .invalidElement(index: index, path: path, reason: reason)
        case let .changesUnavailable(token, reason): self = .changesUnavailable(token: token, reason: reason)
        case let .uniqueIndexViolation(className, index, ids): self = .uniqueIndexViolation(className: className, index: index, ids: ids)
        case let .invalidQuery(reason): self = .invalidQuery(reason: reason)
        case let .encryptionRequired(path): self = .encryptionRequired(path: path)
        case let .unencryptedDatabase(path): self = .unencryptedDatabase(path: path)
        case let .missingEncryptionKey(keyID): self = .missingEncryptionKey(keyID: keyID)
        case let .wrongEncryptionKey(keyID): self = .wrongEncryptionKey(keyID: keyID)
        case let .undecryptableRecord(id, reason): self = .undecryptableRecord(id: id, reason: reason)
        case let .encryptionFailed(id, reason): self = .encryptionFailed(id: id, reason: reason)
        case let .exportWouldDecrypt(path): self = .exportWouldDecrypt(path: path)
        case let .invalidLine(line, reason, linesCommitted): self = .invalidLine(line: line, reason: reason, linesCommitted: linesCommitted)
        case let .missingReference(id, field, referencedID): self = .missingReference(id: id, field: field, referencedID: referencedID)
        case let .server(operation, message): self = .server(operation: operation, message: message)
        case let .unsupported(operation, reason): self = .unsupported(operation: operation, reason: reason)
        case let .readOnlyReplica(source): self = .readOnlyReplica(source: source)
        case let .unknownMigration(name): self = .unknownMigration(name: name)
        case let .migrationInProgress(name): self = .migrationInProgress(name: name)
        case let .migrationConflict(name): self = .migrationConflict(name: name)
        case let .migrationFailed(name, id, reason): self = .migrationFailed(name: name, id: id, reason: reason)
        case let .invalidMigration(reason): self = .invalidMigration(reason: reason)
        case let .migrationPending(name): self = .migrationPending(name: name)
        case let .migratorNotRun(migration): self = .migratorNotRun(migration: migration)
        }
    }
}

extension LocalDatabaseError {
    /// `body`'s result; a lower layer's error it throws, made public. For the synchronous
    /// public calls with typed throws (the asynchronous ones catch in place).
    @inline(__always)
    static func publishing<R>(_ body: () throws(DatabaseError) -> R) throws(LocalDatabaseError) -> R {
        do {
            return try body()
        } catch {
            throw LocalDatabaseError(error)
        }
    }
}

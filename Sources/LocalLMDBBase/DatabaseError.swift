/// An error of the layers below `LocalLMDB`: case for case the public `LocalDatabaseError`, which
/// `LocalLMDB` makes of it where a call leaves the library. The lower layers cannot name the
/// public type, which lives (and is documented) in the top module; each case means what the
/// public case of its name means.
@usableFromInline package enum DatabaseError: Error, Sendable, Equatable, CustomStringConvertible {
    case emptyID
    case invalidDirectory(path: String, reason: String)
    case incompatibleOptions(path: String, reason: String)
    case unsupportedFormat(found: Int, supported: Int)
    case storage(operation: String, code: Int32, message: String)
    case typeMismatch(id: String, requested: String, stored: String)
    case corruptRecord(id: String, reason: String)
    case invalidJSON(reason: String, offset: Int)
    case transactionAlreadyActive
    case noActiveTransaction
    case wrongThread(operation: String)
    case classNameConflict(name: String, storedBy: String, requestedBy: String)
    case unresolvableClass(id: String, className: String)
    case classRegistration(type: String, reason: String)
    case busy(timeout: Duration)
    case transactionFailed(reason: String)
    case closed
    case readOnly
    case wouldDeadlock(operation: String, reason: String)
    case unencodableValue(id: String, path: String, reason: String)
    case decodingFailed(id: String, className: String, path: String, reason: String)
    case invalidElement(index: Int, path: String, reason: String)
    case changesUnavailable(token: String, reason: String)
    case uniqueIndexViolation(className: String, index: String, ids: [String])
    case invalidQuery(reason: String)
    case encryptionRequired(path: String)
    case unencryptedDatabase(path: String)
    case missingEncryptionKey(keyID: String)
    case wrongEncryptionKey(keyID: String)
    case undecryptableRecord(id: String, reason: String)
    case encryptionFailed(id: String, reason: String)
    case exportWouldDecrypt(path: String)
    case invalidLine(line: Int, reason: String, linesCommitted: Int)
    case missingReference(id: String, field: String, referencedID: String)
    case server(operation: String, message: String)
    case unsupported(operation: String, reason: String)
    case readOnlyReplica(source: String)
    case unknownMigration(name: String)
    case migrationInProgress(name: String)
    case migrationConflict(name: String)
    case migrationFailed(name: String, id: String, reason: String)
    case invalidMigration(reason: String)
    case migrationPending(name: String)
    case migratorNotRun(migration: String)

    /// A sentence describing the error, with its context.
    @usableFromInline package var description: String {
        switch self {
        case .emptyID:
            return "Record ids must not be empty."
        case let .invalidDirectory(path, reason):
            return "Cannot use database directory '\(path)': \(reason)"
        case let .incompatibleOptions(path, reason):
            return "Database '\(path)' is already open in this process with other options: \(reason)"
        case let .unsupportedFormat(found, supported):
            return "Database format \(found) is not supported (this version reads format \(supported))."
        case let .storage(operation, code, message):
            return "LMDB error \(code) during \(operation): \(message)"
        case let .typeMismatch(id, requested, stored):
            return "Record '\(id)' holds a \(stored), which is not a \(requested)."
        case let .corruptRecord(id, reason):
            return "Record '\(id)' cannot be decoded: \(reason)"
        case let .invalidJSON(reason, offset):
            return "Invalid JSON at byte \(offset): \(reason)"
        case .transactionAlreadyActive:
            return "A transaction is already active (use override: true to roll it back and start anew)."
        case .noActiveTransaction:
            return "No transaction is active."
        case let .wrongThread(operation):
            return "Internal error: \(operation) ran off the database's writer thread."
        case let .classNameConflict(name, storedBy, requestedBy):
            return "Class name '\(name)' is owned in this database by \(storedBy), so \(requestedBy) cannot use it. "
                + "Give one of them its own stored name with StoredClasses.register(_:as:) before first use; or, if "
                + "\(requestedBy) is the same class moved to another module, adopt the name with StoredClasses.register(_:)."
        case let .unresolvableClass(id, className):
            return "Record '\(id)' holds an object of class '\(className)', which this process cannot find; reading it as "
                + "another class would lose its fields. Register the class with StoredClasses.register(_:) (for example "
                + "after moving it to another module) or map the old name with Legacy.addClassRefactor(old:new:)."
        case let .classRegistration(type, reason):
            return "Cannot register \(type): \(reason)."
        case let .busy(timeout):
            return "Waited \(timeout) for another transaction on this database to end (the busy timeout)."
        case let .transactionFailed(reason):
            return "The transaction failed and must be rolled back (nothing of it will be kept): \(reason)"
        case .closed:
            return "The database is closed."
        case .readOnly:
            return "The database was opened read-only."
        case let .wouldDeadlock(operation, reason):
            return "\(operation) would wait for itself: \(reason)"
        case let .unencodableValue(id, path, reason):
            return "Record '\(id)' cannot be stored: the value at '\(path)' is refused (\(reason)); nothing was written."
        case let .decodingFailed(id, className, path, reason):
            return "Record '\(id)' (\(className)) cannot be decoded at '\(path)': \(reason)"
        case let .changesUnavailable(token, reason):
            return "The changes after token \(token) are not available (\(reason)); resynchronize from the current state."
        case let .invalidElement(index, path, reason):
            return "Element \(index) cannot be built" + (path.isEmpty ? "" : " at '\(path)'") + ": \(reason)"
        case let .uniqueIndexViolation(className, index, ids):
            return "Records \(ids.map { "'\($0)'" }.joined(separator: " and ")) of \(className) have the same value in the unique index \(index); nothing of the write was stored."
        case let .invalidQuery(reason):
            return "The query cannot be run: \(reason)."
        case let .encryptionRequired(path):
            return "The database at \(path) is encrypted: open it with its keys (DatabaseConfiguration.encryption)."
        case let .unencryptedDatabase(path):
            return "The database at \(path) is not encrypted, and opening it with a key would not encrypt what it holds: open it without encryption, or with DatabaseEncryption(cipher, encryptingExistingValues: true) and then call reencrypt() to encrypt its records in place."
        case let .missingEncryptionKey(keyID):
            return "Values of the database may be sealed under the key '\(keyID)', which the cipher does not have: open it with that key among the cipher's keys (finish reencrypt() under the new key before retiring an old one)."
        case let .wrongEncryptionKey(keyID):
            return "The key the cipher has for the id '\(keyID)' is not the database's key of that id (its key check does not open): the key is wrong."
        case let .undecryptableRecord(id, reason):
            return "Record '\(id)' cannot be decrypted: \(reason)."
        case let .encryptionFailed(id, reason):
            return (id.isEmpty ? "A value" : "Record '\(id)'") + " could not be encrypted: \(reason)."
        case let .exportWouldDecrypt(path):
            return "The database at \(path) is encrypted, and an export writes its values in the clear: pass decrypting: true to export it anyway (or back it up, which keeps it encrypted)."
        case let .invalidLine(line, reason, linesCommitted):
            return "Line \(line) is not a record: \(reason). "
                + (linesCommitted > 0 ? "Lines up to \(linesCommitted) were stored; import from line \(linesCommitted + 1) to go on." : "Nothing was stored.")
        case let .missingReference(id, field, referencedID):
            return "Record '\(id)' refers at '\(field)' to record '\(referencedID)', which is not stored."
        case let .server(operation, message):
            return "The database server failed during \(operation): \(message)"
        case let .unsupported(operation, reason):
            return "\(operation) is not supported here: \(reason)"
        case let .readOnlyReplica(source):
            return "The database is a read replica of '\(source)': write to the source, which the replica follows, or detach the replica (PullReplicator.detach()) to make its records its own."
        case let .unknownMigration(name):
            return "The database has had the migration '\(name)', which this process's migrator does not register (a newer version of the app migrated it): this process reads it and writes nothing into it."
        case let .migrationInProgress(name):
            return "The migration '\(name)' is under way on this database: only the migration writes records until it ends (run the migrator to finish it)."
        case let .migrationConflict(name):
            return "Another process changed the database's migrations while '\(name)' ran: nothing of this batch was written; run the migrator again."
        case let .migrationPending(name):
            return "This process's migrator registers the migration '\(name)', which the database has not had: run the migrator (LocalDatabase.migrate(with:)) before writing."
        case let .migratorNotRun(migration):
            return "The database has had the migration '\(migration)': a process writes into it only once it has run a migrator that registers every migration the database has had (LocalDatabase.migrate(with:)). A process that knows none of them reads only."
        case let .invalidMigration(reason):
            return "The migrator cannot run: \(reason). Nothing was migrated."
        case let .migrationFailed(name, id, reason):
            return "The migration '\(name)' failed at record '\(id)': \(reason). Its batch was rolled back; the records before it stay migrated, and running the migrator again goes on from there."
        }
    }
}

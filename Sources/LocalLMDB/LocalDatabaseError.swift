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

    /// A sentence describing the error, with its context.
    public var description: String {
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
            return "Waited \(timeout) for another database's transaction on this directory to end (the busy timeout)."
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
        }
    }
}

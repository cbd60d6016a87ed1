import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// One change a commit made: a record written or deleted, every record of a class deleted,
/// or the database cleared.
public enum Change: Sendable, Hashable {
    /// The record `id` was written (created or replaced) as class `className`.
    case written(id: String, className: String)
    /// The record `id`, of class `className`, was deleted.
    case deleted(id: String, className: String)
    /// Every record stored under the class name `className` was deleted (`delete(T.self)`
    /// deletes under `T`'s current name and each legacy name).
    case typeDeleted(className: String)
    /// Every record was deleted (`clearDatabase()`).
    case cleared

    /// The change as the change log keeps it.
    init(_ logged: LoggedChange) {
        switch logged {
        case let .written(id, className): self = .written(id: id, className: className)
        case let .deleted(id, className): self = .deleted(id: id, className: className)
        case let .typeDeleted(className): self = .typeDeleted(className: className)
        case .cleared: self = .cleared
        }
    }

    /// The change in the change log's form.
    var logged: LoggedChange {
        switch self {
        case let .written(id, className): return .written(id: id, className: className)
        case let .deleted(id, className): return .deleted(id: id, className: className)
        case let .typeDeleted(className): return .typeDeleted(className: className)
        case .cleared: return .cleared
        }
    }

    /// Whether this change may concern records stored under one of `classNames` (see
    /// `LoggedChange.concerns(classNames:)`).
    func concerns(classNames: [String]) -> Bool { logged.concerns(classNames: classNames) }

    /// Whether this change may concern the record `id` (see `LoggedChange.concerns(id:)`).
    func concerns(id: String) -> Bool { logged.concerns(id: id) }

    /// Ids and class names are compared by their bytes, as the database stores them: two
    /// spellings of one text (NFC and NFD) are two records, so they are two changes too.
    public static func == (lhs: Change, rhs: Change) -> Bool { lhs.logged == rhs.logged }

    /// Hashes the bytes of the id and class name (see `==`).
    public func hash(into hasher: inout Hasher) {
        func combine(_ text: String) {
            var text = text
            text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
            hasher.combine(text.utf8.count)
        }
        switch self {
        case let .written(id, className):
            hasher.combine(0)
            combine(id)
            combine(className)
        case let .deleted(id, className):
            hasher.combine(1)
            combine(id)
            combine(className)
        case let .typeDeleted(className):
            hasher.combine(2)
            combine(className)
        case .cleared:
            hasher.combine(3)
        }
    }
}

/// A position in a database's change log: the state after one commit.
///
/// Keep the token of the last change you handled (it is `Codable`: store it anywhere) and ask
/// `changes(since:)` for what came after, even after a restart. A token names the log it
/// belongs to, so a token of another database, or of a database deleted and made anew, is
/// refused rather than misread; and it names its commit, so a token taken before a database
/// was restored from a backup (or its files replaced by an older copy) is refused once new
/// commits reuse its sequence number, rather than silently skipping them.
public struct ChangeToken: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Identifies the database's change log: made when the database was created.
    public let logID: String
    /// The number of commits recorded up to this point.
    public let sequence: UInt64
    /// Identifies the commit at `sequence`: a random number drawn by the commit. 0 when
    /// unknown: at the start of the log, for a commit logged by an earlier version of LocalLMDB,
    /// and for a token stored by one (it decodes without it, and is checked by sequence only).
    public let commit: UInt64

    init(logID: String, sequence: UInt64, commit: UInt64 = 0) {
        self.logID = logID
        self.sequence = sequence
        self.commit = commit
    }

    /// The token of a change log position.
    package init(_ position: LogPosition) {
        self.init(logID: position.logID, sequence: position.sequence, commit: position.commit)
    }

    /// The token as a change log position.
    var position: LogPosition { LogPosition(logID: logID, sequence: sequence, commit: commit) }

    private enum CodingKeys: String, CodingKey {
        case logID, sequence, commit
    }

    /// Decodes a token, also one stored without `commit`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        logID = try container.decode(String.self, forKey: .logID)
        sequence = try container.decode(UInt64.self, forKey: .sequence)
        commit = try container.decodeIfPresent(UInt64.self, forKey: .commit) ?? 0
    }

    /// `logID:sequence`, then `:commit` in hexadecimal when the commit is known.
    public var description: String { position.description }
}

/// What one commit changed, with the token of the state after it.
public struct CommittedChanges: Sendable, Hashable {
    /// The position after this commit.
    public let token: ChangeToken
    /// The changes, in the order they were made.
    public let changes: [Change]

    /// A logged commit's changes.
    init(_ commit: LoggedCommit) {
        token = ChangeToken(commit.position)
        changes = commit.changes.map(Change.init)
    }

    init(token: ChangeToken, changes: [Change]) {
        self.token = token
        self.changes = changes
    }
}

/// Every commit after a token, and the token to ask from next time.
public struct ChangeFeed: Sendable, Hashable {
    /// The commits after the token asked for, oldest first.
    public let commits: [CommittedChanges]
    /// The position after the last of `commits` (the token asked for when there are none).
    public let token: ChangeToken

    /// The logged commits after a position.
    init(_ logged: LoggedCommits) {
        commits = logged.commits.map(CommittedChanges.init)
        token = ChangeToken(logged.position)
    }
}

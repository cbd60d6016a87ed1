import LocalLMDBLMDB
import LocalLMDBJSON

/// One change as the change log keeps it: the store's form of the public `Change`.
///
/// Ids and class names are compared by their UTF-8 bytes, as the database stores them.
package enum LoggedChange: Sendable, Equatable {
    /// The record `id` was written (created or replaced) as class `className`.
    case written(id: String, className: String)
    /// The record `id`, of class `className`, was deleted.
    case deleted(id: String, className: String)
    /// Every record stored under the class name `className` was deleted.
    case typeDeleted(className: String)
    /// Every record was deleted.
    case cleared

    /// Whether this change may concern records stored under one of `classNames`.
    package func concerns(classNames: [String]) -> Bool {
        switch self {
        case let .written(_, className), let .deleted(_, className), let .typeDeleted(className):
            return classNames.contains { $0.hasSameUTF8(as: className) }
        case .cleared:
            return true
        }
    }

    /// Whether this change may concern the record `id`: a write or delete of that id (whatever
    /// its class: a record rewritten as another class is no longer there as the one observed),
    /// and every class deleted (the id may hold a subclass, or another class, whose name is not
    /// among the observed class's names), and the database cleared.
    package func concerns(id: String) -> Bool {
        switch self {
        case let .written(changed, _), let .deleted(changed, _):
            return changed.hasSameUTF8(as: id)
        case .typeDeleted, .cleared:
            return true
        }
    }

    /// Byte-wise equality (see the type's summary).
    package static func == (lhs: LoggedChange, rhs: LoggedChange) -> Bool {
        switch (lhs, rhs) {
        case let (.written(leftID, leftClass), .written(rightID, rightClass)),
            let (.deleted(leftID, leftClass), .deleted(rightID, rightClass)):
            return leftID.hasSameUTF8(as: rightID) && leftClass.hasSameUTF8(as: rightClass)
        case let (.typeDeleted(left), .typeDeleted(right)):
            return left.hasSameUTF8(as: right)
        case (.cleared, .cleared):
            return true
        default:
            return false
        }
    }
}

/// A position in a change log, the state after one commit: the store's form of the public
/// `ChangeToken` (see there for what each part means).
package struct LogPosition: Sendable, Equatable, CustomStringConvertible {
    package let logID: String
    package let sequence: UInt64
    package let commit: UInt64

    package init(logID: String, sequence: UInt64, commit: UInt64 = 0) {
        self.logID = logID
        self.sequence = sequence
        self.commit = commit
    }

    /// `logID:sequence`, then `:commit` in hexadecimal when the commit is known.
    package var description: String {
        commit == 0 ? "\(logID):\(sequence)" : "\(logID):\(sequence):\(String(commit, radix: 16))"
    }
}

/// What one commit changed, with the position after it.
package struct LoggedCommit: Sendable {
    package let position: LogPosition
    package let changes: [LoggedChange]

    package init(position: LogPosition, changes: [LoggedChange]) {
        self.position = position
        self.changes = changes
    }
}

/// The commits after a position, and the position to ask from next time.
package struct LoggedCommits: Sendable {
    package let commits: [LoggedCommit]
    package let position: LogPosition
    /// Whether `position` was the log's last commit when it was read (nothing more to ask for
    /// then); false when unknown, or when `limit` left commits out.
    package let reachesEnd: Bool

    package init(commits: [LoggedCommit], position: LogPosition, reachesEnd: Bool = false) {
        self.commits = commits
        self.position = position
        self.reachesEnd = reachesEnd
    }
}

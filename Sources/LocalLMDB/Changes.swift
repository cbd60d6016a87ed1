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

    /// Whether this change may concern records stored under one of `classNames`.
    func concerns(classNames: [String]) -> Bool {
        switch self {
        case let .written(_, className), let .deleted(_, className), let .typeDeleted(className):
            return classNames.contains { $0.utf8.elementsEqual(className.utf8) }
        case .cleared:
            return true
        }
    }

    /// Whether this change may concern the record `id`: a write or delete of that id (whatever
    /// its class: a record rewritten as another class is no longer there as the one observed),
    /// and every class deleted (the id may hold a subclass, or another class, whose name is not
    /// among the observed class's names), and the database cleared.
    func concerns(id: String) -> Bool {
        switch self {
        case let .written(changed, _), let .deleted(changed, _):
            return changed.utf8.elementsEqual(id.utf8)
        case .typeDeleted, .cleared:
            return true
        }
    }

    /// Ids and class names are compared by their bytes, as the database stores them: two
    /// spellings of one text (NFC and NFD) are two records, so they are two changes too.
    public static func == (lhs: Change, rhs: Change) -> Bool {
        switch (lhs, rhs) {
        case let (.written(leftID, leftClass), .written(rightID, rightClass)),
            let (.deleted(leftID, leftClass), .deleted(rightID, rightClass)):
            return leftID.utf8.elementsEqual(rightID.utf8) && leftClass.utf8.elementsEqual(rightClass.utf8)
        case let (.typeDeleted(left), .typeDeleted(right)):
            return left.utf8.elementsEqual(right.utf8)
        case (.cleared, .cleared):
            return true
        default:
            return false
        }
    }

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
/// refused rather than misread.
public struct ChangeToken: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Identifies the database's change log: made when the database was created.
    public let logID: String
    /// The number of commits recorded up to this point.
    public let sequence: UInt64

    /// `logID:sequence`.
    public var description: String { "\(logID):\(sequence)" }
}

/// What one commit changed, with the token of the state after it.
public struct CommittedChanges: Sendable, Hashable {
    /// The position after this commit.
    public let token: ChangeToken
    /// The changes, in the order they were made.
    public let changes: [Change]
}

/// Every commit after a token, and the token to ask from next time.
public struct ChangeFeed: Sendable, Hashable {
    /// The commits after the token asked for, oldest first.
    public let commits: [CommittedChanges]
    /// The position after the last of `commits` (the token asked for when there are none).
    public let token: ChangeToken
}

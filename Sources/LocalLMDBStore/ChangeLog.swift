import LocalLMDBJSON
import LocalLMDBLMDB
import Foundation

/// The change log: what each commit changed, written in the commit itself, so that no change
/// is ever missed or invented (even across a crash), and readable by any process.
///
/// Layout: in the `changes` database, key = the commit's sequence number (8 bytes, big-endian,
/// so keys sort by number), value = the changes it made (`encode`). The `meta` database holds
/// `changeLogID` (a UUID, made with the database) and `changeBytes` (the log's total size).
///
/// Invariant: sequence numbers are consecutive from the oldest entry kept to the newest; at most
/// `limits.commits` entries and (beyond the newest) `limits.bytes` bytes are kept, the oldest
/// trimmed first, in the commit that adds an entry.
package struct ChangeLog: Sendable {
    package struct Limits: Sendable, Equatable {
        var commits: Int
        var bytes: Int

        package init(commits: Int, bytes: Int) {
            self.commits = commits
            self.bytes = bytes
        }
    }

    let changes: DatabaseHandle
    let meta: DatabaseHandle
    let limits: Limits
    /// The log's identity, for tokens.
    let logID: String

    static let logIDKey = Array("changeLogID".utf8)
    static let bytesKey = Array("changeBytes".utf8)

    // MARK: Writing

    /// Records `entry` as the next commit's changes, and trims the oldest entries past the
    /// limits. Returns the new sequence number; nil (and nothing written) for no changes.
    func append(_ entry: ChangeSet, in transaction: Transaction) throws(DatabaseError) -> UInt64? {
        guard !entry.isEmpty else { return nil }
        let (first, last) = try bounds(in: transaction)
        let sequence = last + 1
        let previous = try commitTag(of: last, in: transaction) ?? 0
        var tag: UInt64 = 0
        while tag == 0 || tag == previous { tag = UInt64.random(in: .min ... .max) }
        let value = Self.encode(entry, tag: tag, previous: previous)
        try Self.key(sequence).withBytes { key throws(DatabaseError) in
            try value.withBytes { bytes throws(DatabaseError) in _ = try transaction.put(changes, key, bytes) }
        }
        var total = try storedBytes(in: transaction) + value.count
        var oldest = first ?? sequence
        while oldest < sequence, Int(sequence - oldest + 1) > limits.commits || total > limits.bytes {
            let removed = try Self.key(oldest).withBytes { key throws(DatabaseError) -> Int in
                let size = try transaction.get(changes, key)?.count ?? 0
                _ = try transaction.delete(changes, key)
                return size
            }
            total -= removed
            oldest += 1
        }
        try Self.bytesKey.withBytes { key throws(DatabaseError) in
            try Self.uint64(UInt64(max(total, 0))).withBytes { bytes throws(DatabaseError) in _ = try transaction.put(meta, key, bytes) }
        }
        return sequence
    }

    // MARK: Reading

    /// The oldest sequence number kept (nil when the log is empty) and the newest (0 when empty).
    package func bounds(in transaction: Transaction) throws(DatabaseError) -> (first: UInt64?, last: UInt64) {
        try transaction.withCursor(changes) { cursor throws(DatabaseError) in
            guard let first = try cursor.get(.first), let last = try cursor.get(.last) else { return (nil, 0) }
            return (Self.sequence(first.key), Self.sequence(last.key))
        }
    }

    /// The token of the state `transaction` sees.
    package func token(in transaction: Transaction) throws(DatabaseError) -> LogPosition {
        let last = try bounds(in: transaction).last
        return LogPosition(logID: logID, sequence: last, commit: try commitTag(of: last, in: transaction) ?? 0)
    }

    /// The tag that commit `sequence` drew (see `ChangeToken.commit`), from its own entry or,
    /// when that was trimmed, from the next one's; nil when unknown (no such entry, or logged
    /// by an earlier version).
    private func commitTag(of sequence: UInt64, in transaction: Transaction) throws(DatabaseError) -> UInt64? {
        guard sequence > 0 else { return nil }
        if let own = try Self.key(sequence).withBytes({ key throws(DatabaseError) in try transaction.get(changes, key) }) {
            return Self.tags(own)?.tag
        }
        if let next = try Self.key(sequence + 1).withBytes({ key throws(DatabaseError) in try transaction.get(changes, key) }) {
            return Self.tags(next)?.previous
        }
        return nil
    }

    /// The commits after `token`, at most `limit` of them.
    /// - Throws: `changesUnavailable` when `token` belongs to another log, is ahead of this one,
    ///   or is older than the oldest commit kept (changes after it were trimmed).
    package func entries(after token: LogPosition, limit: Int = .max, in transaction: Transaction) throws(DatabaseError) -> LoggedCommits {
        guard token.logID == logID else {
            throw .changesUnavailable(token: token.description, reason: "the token belongs to another database's change log")
        }
        let (first, last) = try bounds(in: transaction)
        guard token.sequence <= last else {
            throw .changesUnavailable(token: token.description, reason: "the token is ahead of this database's log (at \(last))")
        }
        if token.commit != 0, let tag = try commitTag(of: token.sequence, in: transaction), tag != token.commit {
            throw .changesUnavailable(
                token: token.description,
                reason: "commit \(token.sequence) of this database is not the token's: the database was restored from an older copy "
                    + "or replaced since the token was taken, and the commits after it are not the ones that followed it")
        }
        guard token.sequence < last else { return LoggedCommits(commits: [], position: token) }
        guard let first, token.sequence + 1 >= first else {
            throw .changesUnavailable(
                token: token.description, reason: "the changes after it were trimmed from the log (it keeps commits from \(first ?? 0))")
        }
        var commits: [LoggedCommit] = []
        try transaction.withCursor(changes) { cursor throws(DatabaseError) in
            var entry = try Self.key(token.sequence + 1).withBytes { key throws(DatabaseError) in try cursor.get(.key, key: key) }
            while let current = entry, commits.count < limit {
                let sequence = Self.sequence(current.key)
                guard let decoded = Self.decode(current.value) else {
                    throw .corruptRecord(id: "change log entry \(sequence)", reason: "it cannot be decoded")
                }
                let commit = Self.tags(current.value)?.tag ?? 0
                commits.append(LoggedCommit(position: LogPosition(logID: logID, sequence: sequence, commit: commit), changes: decoded))
                entry = try cursor.get(.next)
            }
        }
        return LoggedCommits(commits: commits, position: commits.last?.position ?? token)
    }

    private func storedBytes(in transaction: Transaction) throws(DatabaseError) -> Int {
        let stored = try Self.bytesKey.withBytes { key throws(DatabaseError) in try transaction.get(meta, key).map { Array($0) } }
        return stored.map { Int(clamping: Self.sequence($0)) } ?? 0
    }

    // MARK: Encoding

    static func key(_ sequence: UInt64) -> [UInt8] { uint64(sequence) }

    static func uint64(_ value: UInt64) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }

    static func sequence(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        guard bytes.count == 8 else { return 0 }
        return bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }

    private static func sequence(_ bytes: [UInt8]) -> UInt64 {
        bytes.withUnsafeBytes { sequence($0) }
    }

    /// Version 2: the version byte, the commit's tag and the previous commit's (8
    /// bytes each, big-endian; see `ChangeToken.commit`), then the runs of version 1.
    /// Version 1: a version byte, then runs of changes, in order. A run of records written (1) or
    /// deleted (2) under one class name is the kind byte, the class name, the number of ids and
    /// the ids (a batch of one class is one run: its class name is stored once). A class
    /// deleted (3) is the kind byte and the class name;
    /// the database cleared (4), the kind byte alone. Strings and numbers are a LEB128 length or
    /// value, then the UTF-8 bytes.
    package static func encode(_ record: ChangeSet, tag: UInt64 = 0, previous: UInt64 = 0) -> [UInt8] {
        var writer = EntryWriter()
        writer.bytes += uint64(tag) + uint64(previous)
        for entry in record.entries {
            switch entry {
            case let .written(records):
                // Runs of one class: its name is stored once.
                var start = 0
                while start < records.count {
                    let type = records.type(at: start)
                    var end = start + 1
                    while end < records.count, records.type(at: end) == type { end += 1 }
                    writer.beginRun(kind: 1, className: records.types[type].name, count: end - start)
                    for index in start..<end { records.withRecord(at: index) { writer.append($0.id) } }
                    start = end
                }
            case let .change(.written(id, className)), let .change(.deleted(id, className)):
                let kind: UInt8 = if case .change(.written) = entry { 1 } else { 2 }
                writer.beginRun(kind: kind, className: className, count: 1)
                writer.append(id)
            case let .change(.typeDeleted(className)):
                writer.bytes.append(3)
                writer.append(className)
            case .change(.cleared):
                writer.bytes.append(4)
            }
        }
        return writer.bytes
    }

    /// Appends the parts of an entry.
    private struct EntryWriter {
        var bytes: [UInt8] = [2]

        /// Appends `text`, length first.
        mutating func append(_ text: String) {
            Varint.append(lengthPrefixed: text, to: &bytes)
        }

        /// Appends the UTF-8 `utf8`, length first.
        mutating func append(_ utf8: UnsafeRawBufferPointer) {
            Varint.append(lengthPrefixed: utf8, to: &bytes)
        }

        mutating func beginRun(kind: UInt8, className: String, count: Int) {
            if bytes.count == ChangeLog.headerSize { bytes.reserveCapacity(count * 40 + 64) }
            bytes.append(kind)
            append(className)
            Varint.append(count, to: &bytes)
        }
    }

    /// `encode` of a list of changes.
    static func encode(_ changes: [LoggedChange]) -> [UInt8] {
        encode(ChangeSet(changes))
    }

    /// The size of a version 2 entry's header: the version byte and two tags.
    static let headerSize = 17

    /// An entry's commit tag and its previous commit's; nil for an entry of version 1 (or not one).
    static func tags(_ bytes: UnsafeRawBufferPointer) -> (tag: UInt64, previous: UInt64)? {
        guard bytes.first == 2, bytes.count >= headerSize else { return nil }
        return (sequence(UnsafeRawBufferPointer(rebasing: bytes[1..<9])), sequence(UnsafeRawBufferPointer(rebasing: bytes[9..<17])))
    }

    /// The changes in an entry; nil when it is not one this version wrote.
    package static func decode(_ bytes: UnsafeRawBufferPointer) -> [LoggedChange]? {
        var offset: Int
        switch bytes.first {
        case 1: offset = 1
        case 2 where bytes.count >= headerSize: offset = headerSize
        default: return nil
        }
        func number() -> Int? {
            Varint.number(in: bytes, at: &offset)
        }
        func string() -> String? {
            Varint.lengthPrefixed(in: bytes, at: &offset).map { String(decoding: $0, as: UTF8.self) }
        }
        var changes: [LoggedChange] = []
        while offset < bytes.count {
            let kind = bytes[offset]
            offset += 1
            switch kind {
            case 1, 2:
                guard let className = string(), let count = number(), count <= bytes.count - offset else { return nil }
                changes.reserveCapacity(changes.count + count)
                for _ in 0..<count {
                    guard let id = string() else { return nil }
                    changes.append(kind == 1 ? .written(id: id, className: className) : .deleted(id: id, className: className))
                }
            case 3:
                guard let className = string() else { return nil }
                changes.append(.typeDeleted(className: className))
            case 4:
                changes.append(.cleared)
            default:
                return nil
            }
        }
        return changes
    }
}

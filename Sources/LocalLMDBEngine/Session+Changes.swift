import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import Foundation

// The change log: tokens, feeds, and reads that give the token they were made at.
extension Session {
    /// The change log, or `changesUnavailable` when this database has none.
    private func changeLog() throws(DatabaseError) -> ChangeLog {
        _ = try checkOpen()
        guard let log = engine.store.changeLog else {
            throw .changesUnavailable(token: "", reason: "the database has no change log yet: open it once for writing")
        }
        return log
    }

    /// The position after the last commit.
    package func changeToken() throws(DatabaseError) -> LogPosition {
        let log = try changeLog()
        return try snapshot { transaction throws(DatabaseError) in try log.token(in: transaction) }
    }

    /// The commits after `token` (at most `limit`), from one snapshot.
    package func changeFeedBlocking(since token: LogPosition, limit: Int = .max) throws(DatabaseError) -> LoggedCommits {
        let log = try changeLog()
        return try snapshot { transaction throws(DatabaseError) in try log.entries(after: token, limit: limit, in: transaction) }
    }

    /// A snapshot read: it never waits, so the asynchronous form runs it at once.
    package nonisolated(nonsending) func changeFeed(since token: LogPosition, limit: Int = .max) async throws(DatabaseError) -> LoggedCommits {
        try changeFeedBlocking(since: token, limit: limit)
    }

    /// A snapshot read: it never waits.
    package nonisolated(nonsending) func readWithToken<Read: SnapshotRead>(_ read: Read) async throws(DatabaseError) -> (Read.Value, LogPosition) {
        let log = try changeLog()
        return try snapshot { transaction throws(DatabaseError) in
            (try read.snapshot(storeSnapshot(transaction)), try log.token(in: transaction))
        }
    }
}

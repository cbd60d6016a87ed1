import Foundation
import LocalLMDBLMDB
import LocalLMDBEngine

/// How far a backup (``LocalDatabase/backup(to:compact:progress:)``) has come.
public struct BackupProgress: Sendable, Equatable {
    /// Bytes of the copy written so far.
    public let bytesCopied: Int
    /// Bytes the copy is expected to take: the data file's pages in use when the backup began
    /// (a compacted copy ends shorter; the last report gives the copy's size in both fields).
    public let bytesExpected: Int
}

extension BackupProgress {
    /// The engine's progress, in the public form.
    static func listener(_ progress: (@Sendable (BackupProgress) -> Void)?) -> BackupListener? {
        guard let progress else { return nil }
        return { copied, expected in progress(BackupProgress(bytesCopied: copied, bytesExpected: expected)) }
    }
}

extension LocalDatabase {
    /// Copies the database into the new directory `destination` while other tasks and
    /// processes go on reading and writing: a hot backup, consistent as of one commit (the
    /// last one before the copy began; this database's open transaction, if any, is not in
    /// it). The copy is a database of its own: open it with the same configuration (an
    /// encrypted database's copy is encrypted under the same keys: nothing is decrypted).
    ///
    /// The copy is written beside `destination` under a hidden name, synced, and renamed to
    /// `destination` once complete: when this returns, the backup survives power loss, and a
    /// backup that fails or whose process is killed leaves no directory named `destination`
    /// (a killed one leaves its hidden `.<name>.partial-…` directory, which can be removed).
    ///
    /// The copy runs on a thread of its own, never on the cooperative pool. While it runs, a
    /// write that needs the map to grow waits for it to finish.
    /// - Parameters:
    ///   - destination: A directory that does not exist yet, in an existing directory.
    ///   - compact: Leave free pages out and renumber the pages (LMDB's `mdb_copy -c`): a
    ///     smaller copy, which takes longer to make. Also drops old versions of values that
    ///     free pages still held.
    ///   - progress: Called about every 100 ms while the copy is written, and once at the end,
    ///     on the backup's thread.
    /// - Throws: `LocalDatabaseError.invalidDirectory` when `destination` exists or its parent
    ///   does not; `.storage` when the copy cannot be written (a full disk); `.closed`.
    public nonisolated(nonsending) func backup(
        to destination: URL, compact: Bool = false, progress: (@Sendable (BackupProgress) -> Void)? = nil
    ) async throws {
        do throws(DatabaseError) {
            try await engine.writer.backup(to: destination, compact: compact, progress: BackupProgress.listener(progress))
        } catch { throw LocalDatabaseError(error) }
    }
}

extension SerializationDatabase {
    /// Copies the database into the new directory `destination`, blocking the calling thread
    /// (see `LocalDatabase.backup(to:compact:progress:)`). Returns whether the backup was
    /// made; on failure `lastError` says why.
    @discardableResult
    public func backup(to destination: URL, compact: Bool = false, progress: (@Sendable (BackupProgress) -> Void)? = nil) -> Bool {
        run(false) { engine throws(DatabaseError) in
            try engine.writer.backupBlocking(to: destination, compact: compact, progress: BackupProgress.listener(progress))
            return true
        }
    }
}

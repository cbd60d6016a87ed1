import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import Foundation

// Copies of the database, made on a thread of their own.
extension Session {
    package nonisolated(nonsending) func backup(to destination: URL, compact: Bool, progress: BackupListener?) async throws(DatabaseError) {
        _ = try checkOpen()
        let engine = self.engine
        // On a thread of its own: the copy blocks for as long as it takes to write.
        let result: Result<Void, DatabaseError> = await withCheckedContinuation { continuation in
            let thread = Thread {
                continuation.resume(returning: Result { () throws(DatabaseError) in
                    try engine.environment.backup(to: destination, compact: compact, progress: progress)
                })
            }
            thread.name = "LocalLMDB backup"
            thread.start()
        }
        try result.get()
    }

    package func backupBlocking(to destination: URL, compact: Bool, progress: BackupListener?) throws(DatabaseError) {
        _ = try checkOpen()
        try engine.environment.backup(to: destination, compact: compact, progress: progress)
    }
}

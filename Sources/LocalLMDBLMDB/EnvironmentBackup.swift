import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Told of a backup's progress: the bytes copied so far and the bytes expected (the data
/// file's pages in use; a compacted copy ends shorter).
package typealias BackupListener = @Sendable (_ copied: Int, _ expected: Int) -> Void

/// A hot backup of one environment into a new directory (`Environment.backup`).
///
/// The copy is written into a hidden directory beside the destination
/// (`.<name>.partial-<uuid>`), synced, and only then renamed to the destination, whose parent is
/// synced in turn: a backup that fails or is killed leaves no directory under the destination's
/// name, and one that returned survives power loss. A failed backup removes its hidden
/// directory; one killed leaves it, named as partial.
enum EnvironmentBackup {
    /// How often progress is reported while the copy runs.
    static let progressInterval = DispatchTimeInterval.milliseconds(100)

    /// Copies `environment` into the new directory `destination` (see the type's summary),
    /// blocking the calling thread; the copy itself runs on a thread of its own, while this one
    /// reports progress.
    /// - Throws: `invalidDirectory` when `destination` exists or its parent is not a directory;
    ///   `storage` when the copy cannot be written (a full disk); `closed`.
    static func run(_ environment: Environment, to destination: URL, compact: Bool, progress: BackupListener?) throws(DatabaseError) {
        let destination = destination.standardizedFileURL
        let path = destination.path
        let files = FileManager.default
        guard !files.fileExists(atPath: path) else {
            throw .invalidDirectory(path: path, reason: "it exists: a backup is written to a new directory")
        }
        let parent = destination.deletingLastPathComponent()
        var isDirectory: ObjCBool = false
        guard files.fileExists(atPath: parent.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw .invalidDirectory(path: path, reason: "its parent directory does not exist")
        }
        let partial = parent.appendingPathComponent(".\(destination.lastPathComponent).partial-\(UUID().uuidString)")
        guard mkdir(partial.path, 0o700) == 0 else { throw LMDBStatus.error(errno, "create '\(partial.path)'") }
        do throws(DatabaseError) {
            try write(environment, into: partial, compact: compact, progress: progress)
            guard !files.fileExists(atPath: path) else {
                throw .invalidDirectory(path: path, reason: "it was created while the backup was written")
            }
            guard rename(partial.path, path) == 0 else { throw LMDBStatus.error(errno, "rename the backup to '\(path)'") }
            try syncDirectory(parent.path)
        } catch {
            try? files.removeItem(at: partial)
            throw error
        }
    }

    /// Writes and syncs the copy's data file in `directory`.
    private static func write(_ environment: Environment, into directory: URL, compact: Bool, progress: BackupListener?) throws(DatabaseError) {
        let file = directory.appendingPathComponent("data.mdb").path
        let descriptor = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw LMDBStatus.error(errno, "create '\(file)'") }
        defer { close(descriptor) }
        let expected = environment.bytesInUse
        let outcome = Locked<Result<Void, DatabaseError>?>(nil)
        let finished = DispatchSemaphore(value: 0)
        let copier = Thread {
            let result = Result { () throws(DatabaseError) in try environment.copy(to: descriptor, compact: compact) }
            outcome.withLock { $0 = result }
            finished.signal()
        }
        copier.name = "LocalLMDB backup"
        copier.start()
        // Bounded by the copy, which reads a bounded file; progress comes every interval.
        while finished.wait(timeout: .now() + progressInterval) == .timedOut {
            progress?(size(of: descriptor), expected)
        }
        try outcome.withLock { $0 }?.get()
        guard fsync(descriptor) == 0 else { throw LMDBStatus.error(errno, "sync '\(file)'") }
        let written = size(of: descriptor)
        progress?(written, written)
        try syncDirectory(directory.path)
    }

    private static func size(of descriptor: Int32) -> Int {
        var status = stat()
        return fstat(descriptor, &status) == 0 ? Int(status.st_size) : 0
    }

    private static func syncDirectory(_ path: String) throws(DatabaseError) {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw LMDBStatus.error(errno, "open '\(path)'") }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw LMDBStatus.error(errno, "sync '\(path)'") }
    }
}

extension Environment {
    /// Copies the environment into the new directory `destination`, consistent as of one
    /// commit, while other transactions go on (`EnvironmentBackup`); `compact` leaves free
    /// pages out. Blocks the calling thread (the copy runs on a thread of its own).
    package func backup(to destination: URL, compact: Bool, progress: BackupListener?) throws(DatabaseError) {
        try EnvironmentBackup.run(self, to: destination, compact: compact, progress: progress)
    }
}

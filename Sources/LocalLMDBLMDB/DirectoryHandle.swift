#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file's identity: the device and inode the file system knows it by, whatever path led to it.
package struct FileIdentity: Hashable, Sendable {
    let device: UInt64
    let inode: UInt64
}

/// An open database directory, held open for as long as its environment is.
///
/// Holding the directory open keeps its inode from being reused while the environment lives
/// (even if the directory is deleted), so its `identity` names this directory alone for that time.
package final class DirectoryHandle: Sendable {
    package let path: String
    package let identity: FileIdentity
    private let descriptor: Int32

    /// Opens the existing directory `path`.
    package init(path: String) throws(DatabaseError) {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .invalidDirectory(path: path, reason: String(cString: strerror(errno))) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw .invalidDirectory(path: path, reason: reason)
        }
        self.path = path
        self.descriptor = descriptor
        self.identity = FileIdentity(device: UInt64(truncatingIfNeeded: info.st_dev), inode: UInt64(truncatingIfNeeded: info.st_ino))
    }

    deinit {
        close(descriptor)
    }
}

/// LMDB's lock file, made ready before LMDB maps it.
///
/// LMDB extends a new lock file with `ftruncate` (a sparse file) and then writes through a shared
/// memory map of it: on a full file system, the first write to an unbacked page kills the
/// process with SIGBUS. Allocating the file's blocks first turns a full disk into an error at
/// open. Only the part past the file's current end is allocated, so a lock file in use by
/// other processes is never touched.
package enum LockFile {
    /// Room for LMDB's lock table with `readers` reader slots (64 bytes each) and its header,
    /// rounded up generously: LMDB adopts a larger file as it is.
    static func size(readers: Int) -> Int {
        (readers * 64 + 8192 + 4095) / 4096 * 4096
    }

    /// Allocates `lock.mdb` in `directory` for `readers` reader slots, creating it (0600) if needed.
    static func prepare(in directory: String, readers: Int) throws(DatabaseError) {
        let size = size(readers: readers)
        let path = directory + "/lock.mdb"
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw failure(errno, "open lock file '\(path)'") }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw failure(errno, "stat lock file '\(path)'") }
        let current = Int(info.st_size)
        guard current < size else { return }
        #if canImport(Glibc)
        let code = posix_fallocate(descriptor, off_t(current), off_t(size - current))
        // A file system that cannot allocate ahead (EOPNOTSUPP) is left to LMDB as before.
        if code != 0 && code != EOPNOTSUPP && code != EINVAL { throw failure(code, "allocate lock file '\(path)'") }
        #else
        // Writing the zeros is how to allocate past the end portably.
        let zeros = [UInt8](repeating: 0, count: size - current)
        let written = zeros.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, off_t(current)) }
        if written != zeros.count { throw failure(written < 0 ? errno : ENOSPC, "allocate lock file '\(path)'") }
        #endif
    }

    private static func failure(_ code: Int32, _ operation: String) -> DatabaseError {
        .storage(operation: operation, code: code, message: String(cString: strerror(code)))
    }
}

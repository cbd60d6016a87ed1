import CLMDB
import Foundation

/// How an environment uses its files: what `localdb stats` reports.
package struct StorageStatistics: Sendable {
    /// The size of the data file.
    package let fileBytes: Int
    /// The memory map's current size (the most the data file may grow to before it is enlarged).
    package let mapBytes: Int
    /// The bytes of the map in use: the pages up to the last one written.
    package let usedBytes: Int
    /// LMDB's page size.
    package let pageSize: Int
    /// The id of the last committed write transaction.
    package let lastCommit: Int
    /// Reader slots in use (by any process), and how many there are.
    package let readers: Int
    package let maxReaders: Int
}

extension Environment {
    /// The environment's use of its files, now.
    package func storageStatistics() -> StorageStatistics {
        var info = MDB_envinfo()
        var stat = MDB_stat()
        mdb_env_info(handle, &info)
        mdb_env_stat(handle, &stat)
        let file = (try? FileManager.default.attributesOfItem(atPath: directoryPath + "/data.mdb")[.size] as? Int) ?? 0
        return StorageStatistics(
            fileBytes: file, mapBytes: info.me_mapsize, usedBytes: (info.me_last_pgno + 1) * Int(stat.ms_psize),
            pageSize: Int(stat.ms_psize), lastCommit: info.me_last_txnid, readers: Int(info.me_numreaders),
            maxReaders: Int(info.me_maxreaders))
    }
}

/// A reader slot of an environment's lock file in use: the process and thread holding it, and
/// the transaction (snapshot) it reads, if one is open.
package struct ReaderSlotInfo: Sendable {
    package let process: Int32
    package let thread: UInt64
    /// The id of the transaction read; nil when the slot is held between reads.
    package let transaction: Int?
}

extension Environment {
    /// The reader slots in use, by any process (LMDB's reader table).
    package func readerSlots() -> [ReaderSlotInfo] {
        final class Lines {
            var text = ""
        }
        let lines = Lines()
        _ = withExtendedLifetime(lines) {
            mdb_reader_list(handle, { message, context in
                guard let message, let context else { return 0 }
                Unmanaged<Lines>.fromOpaque(context).takeUnretainedValue().text += String(cString: message)
                return 0
            }, Unmanaged.passUnretained(lines).toOpaque())
        }
        // "    pid     thread     txnid" then one line a slot: decimal pid, hex thread, decimal
        // txnid or "-" (or "(no active readers)").
        return lines.text.split(separator: "\n").dropFirst().compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count == 3, let process = Int32(fields[0]), let thread = UInt64(fields[1], radix: 16) else { return nil }
            return ReaderSlotInfo(process: process, thread: thread, transaction: Int(fields[2]))
        }
    }

    /// Frees the reader slots of processes that are gone; returns how many.
    package func clearStaleReaderSlots() -> Int {
        clearStaleReaders()
    }
}

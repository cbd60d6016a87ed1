import CLMDB
import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import LocalLMDBTestSupport
import Testing

@Suite("Data safety: damaged files")
struct DamagedFileTests {
    /// Issue item 9: a truncated data file is a typed error at open, never a crash (SIGBUS), and
    /// the file is left as it was. Opened in a child process, so a crash is seen as one.
    @Test func aTruncatedDataFileIsATypedErrorAtOpen() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("db")
            #expect(try runHelper(["write-big", url.path, "big", "40", "64"]).lines == ["done"])
            let data = url.appendingPathComponent("data.mdb")
            let original = try Data(contentsOf: data)
            let pageSize = 4096
            #expect(original.count > 64 * pageSize)
            for length in [100, pageSize, 2 * pageSize, 3 * pageSize, original.count / 2, original.count - pageSize] {
                try original.prefix(length).write(to: data)
                let (process, output) = try launchHelper(["open", url.path])
                let lines = completeLines(of: output)
                let ended = process.waitUntilExit()
                if case .signal = ended { Issue.record("truncated to \(length): killed, \(ended)") }
                #expect(lines.count == 1 && lines[0].hasPrefix("error "), "truncated to \(length): \(lines)")
                #expect(try Data(contentsOf: data).count == length, "the damaged file was changed")
            }
            // Made whole again, it opens with everything in it.
            try original.write(to: data)
            #expect(try runHelper(["open", url.path]).lines == ["opened 40"])
        }
    }

    /// A sound database can be shorter than its last commit's page number says: a page taken
    /// from the end and freed again within one transaction is never written. Such a database
    /// (written here by ordinary transactions that write and delete) must open, in another
    /// process, and read whole; it was refused as truncated by a check of the length alone.
    @Test func aDatabaseWhoseFreedLastPagesWereNeverWrittenOpens() async throws {
        try await withDatabase { database, directory in
            var random = SplitMix(seed: 7)
            var shortFiles = 0
            for round in 0..<60 where shortFiles < 1 {
                try await database.startTransaction()
                let count = Int(random.next() % 3000)
                let base = Int(random.next() % 100_000)
                for index in 0..<count {
                    let text = String(repeating: "v", count: 1 + Int(random.next() % 600))
                    try await database.write(Record(id: "k\(base + index)", data: Note(text: text)))
                }
                if random.next() % 2 == 0 {
                    try await database.write(Record(id: "big", data: Note(text: String(repeating: "b", count: 5000 + Int(random.next() % 195_000)))))
                }
                for index in 0..<count where random.next() % 4 != 0 { try await database.delete(id: "k\(base + index)") }
                if random.next() % 2 == 0 { try await database.delete(id: "big") }
                try await database.commitTransaction()
                let fileSize = try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent("data.mdb").path)[.size] as? Int ?? 0
                guard fileSize < database.session.engine.environment.usage.used else { continue }
                shortFiles += 1
                let stored = try await database.count()
                #expect(try runHelper(["open", directory.path]).lines == ["opened \(stored)"], "round \(round)")
            }
            #expect(shortFiles > 0, "no round left the data file shorter than its last page: the case was not exercised")
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }
}

@Suite("Data safety: looping readers")
struct LoopingReaderTests {
    /// Issue item 11: tasks that loop on reads (which complete without suspending), one more
    /// than the pool has threads, do not hold up 20 transactions' begins, writes and rollbacks:
    /// the reads give way to the library's resumed tasks. In a process of its own, whose pool
    /// nothing else uses (the loops would starve this suite's other tests, and they would
    /// slow the transactions).
    @Test func loopingReadersDoNotHoldUpTransactions() async throws {
        try await withTemporaryDirectory { directory in
            let result = try runHelper(["looping-readers", directory.appendingPathComponent("db").path])
            let words = result.lines.first?.split(separator: " ").map(String.init) ?? []
            #expect(result.status == 0 && words.count == 6, "\(result.lines)")
            guard words.count == 6, let seconds = Int(words[1]), let hit = Int(words[3]) else { return }
            #expect(hit == 0, "\(hit) reading loops ran until their deadline: the transactions waited for them")
            #expect(seconds < 15, "20 transactions took \(seconds) s beside looping readers")
            #expect(words[5] == "1")
        }
    }
}

@Suite("Data safety: change tokens across restored copies")
struct RestoredTokenTests {
    func copyFiles(from source: URL, to destination: URL) throws {
        try? FileManager.default.removeItem(at: destination)
        try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: true)
        for name in ["data.mdb", "lock.mdb"] {
            try FileManager.default.copyItem(at: source.appendingPathComponent(name), to: destination.appendingPathComponent(name))
        }
    }

    /// A token taken after a backup names a commit the restored database never made: once new
    /// commits reuse its sequence number, asking for the changes after it is refused, where it
    /// silently skipped the new commits.
    @Test func aTokenFromBeforeARestoreIsRefused() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("db")
            let backup = directory.appendingPathComponent("backup")
            var database = try LocalDatabase(directory: url)
            try await database.write(Record(id: "a", data: Note(text: "a")))
            await database.close()
            try copyFiles(from: url, to: backup)
            database = try LocalDatabase(directory: url)
            try await database.write(Record(id: "b", data: Note(text: "b")))
            try await database.write(Record(id: "c", data: Note(text: "c")))
            let token = try database.changeToken()
            #expect(token.commit != 0)
            // Round trip through Codable, as an app stores it.
            let stored = try JSONDecoder().decode(ChangeToken.self, from: JSONEncoder().encode(token))
            #expect(stored == token)
            await database.close()
            // The backup comes back, and the app writes on: sequences 2 and 3 again, other commits.
            try copyFiles(from: backup, to: url)
            database = try LocalDatabase(directory: url)
            try await database.write(Record(id: "d", data: Note(text: "d")))
            try await database.write(Record(id: "e", data: Note(text: "e")))
            try await database.write(Record(id: "f", data: Note(text: "f")))
            #expect(try database.changeToken().sequence > token.sequence)
            await expectError({ if case .changesUnavailable = $0 { true } else { false } }) {
                _ = try database.changes(since: stored)
            }
            // A token of the restored database itself works.
            let current = try database.changeToken()
            try await database.write(Record(id: "g", data: Note(text: "g")))
            #expect(try database.changes(since: current).commits.map(\.changes) == [[.written(id: "g", className: "Note")]])
            await database.close()
        }
    }

    /// The check holds when the token's own entry was trimmed from the log (the next entry names
    /// the commit before it), and a token stored by an earlier version (no commit) still works.
    @Test func trimmedEntriesAndOldTokens() async throws {
        try await withTemporaryDirectory { directory in
            var configuration = DatabaseConfiguration()
            configuration.changeLogCommits = 2
            let database = try LocalDatabase(directory: directory.appendingPathComponent("db"), configuration: configuration)
            try await database.write(Record(id: "a", data: Note(text: "a")))
            let token = try database.changeToken()
            try await database.write(Record(id: "b", data: Note(text: "b")))
            try await database.write(Record(id: "c", data: Note(text: "c")))
            // The log keeps commits 2 and 3; the token is at 1, whose entry is gone.
            let feed = try database.changes(since: token)
            #expect(feed.commits.count == 2)
            let forged = ChangeToken(logID: token.logID, sequence: token.sequence, commit: token.commit &+ 1)
            await expectError({ if case .changesUnavailable = $0 { true } else { false } }) {
                _ = try database.changes(since: forged)
            }
            let old = try JSONDecoder().decode(ChangeToken.self, from: Data(#"{"logID":"\#(token.logID)","sequence":\#(token.sequence)}"#.utf8))
            #expect(old.commit == 0)
            #expect(try database.changes(since: old).commits.count == 2)
        }
    }
}

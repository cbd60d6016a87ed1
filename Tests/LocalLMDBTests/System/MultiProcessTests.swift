import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBLMDB
import LocalLMDBTestSupport
import Testing

@Suite("Several processes on one database")
struct MultiProcessTests {
    @Test func twoProcessesAndThisOneWriteAtOnce() async throws {
        try await withDatabase { database, directory in
            let first = try launchHelper(["write-count", directory.path, "first", "600"])
            let second = try launchHelper(["write-count", directory.path, "second", "600"])
            for index in 0..<300 {
                try await database.write(Record(id: "parent-\(index)", data: Entry(sequence: index, payload: "")))
                if index % 50 == 0 { _ = try await database.count(Entry.self) }
            }
            for (process, output) in [first, second] {
                #expect(output.readText() == "done\n")
                #expect(process.waitUntilExit() == .exit(0))
            }
            #expect(try await database.count(Entry.self) == 1500)
            #expect(try await database.count() == 1500)
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }

    @Test func aMapGrownByAnotherProcessIsAdopted() async throws {
        try await withDatabase { database, directory in
            // Open (a 16 MiB map) and read before the other process grows the file far beyond it.
            try await database.write(Record(id: "before", data: Entry(sequence: 0, payload: "x")))
            let result = try runHelper(["write-big", directory.path, "big", "80", "512"])  // 40 MiB
            #expect(result.lines == ["done"])
            // Reads and writes here must adopt the larger map rather than fail.
            let big: Entry? = try await database.read(id: "big-79")
            #expect(big?.payload.count == 512 * 1024)
            #expect(try await database.count(Entry.self) == 81)
            try await database.write(Record(id: "after", data: Entry(sequence: 1, payload: String(repeating: "a", count: 1 << 20))))
            let entries: [Entry] = try await database.read()
            #expect(entries.count == 82)
        }
    }

    /// Starts a helper that holds a read transaction, waits until it does, and kills it.
    func killReaderMidRead(_ url: URL) throws {
        let (reader, output) = try launchHelper(["hold-reader", url.path])
        #expect(String(decoding: output.readSome(), as: UTF8.self) == "holding\n")
        reader.send(SIGKILL)
        reader.waitUntilExit()
    }

    @Test func aReaderKilledMidReadLeavesNoStaleSlot() async throws {
        try await withDatabase { database, url in
            // This process keeps the database open throughout, as a running app would (LMDB
            // resets the reader table when the first process opens it, which would hide the slot).
            try await database.write(Record(id: "a", data: Note(text: "x")))
            // A killed reader does leave a slot behind, which a check finds:
            try killReaderMidRead(url)
            #expect(try runHelper(["stale-readers", url.path]).lines == ["1"])
            // After another kill, this process's next write transaction once its last check is
            // a second old (made so at once here) clears it.
            try killReaderMidRead(url)
            database.session.engine.environment.forgetReaderCheck()
            try await database.write(Record(id: "b", data: Note(text: "y")))
            #expect(try runHelper(["stale-readers", url.path]).lines == ["0"])
            #expect(try await database.count() == 2)
        }
    }
}

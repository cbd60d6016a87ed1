import CLMDB
import Foundation
import LocalLMDB
import LocalLMDBTestSupport
import Testing

@Suite("Corrupt stored data")
struct CorruptDataTests {
    /// Overwrites the values of some records with raw LMDB, as a disk fault or a foreign program
    /// might. No LocalDatabase may have the directory open in this process meanwhile.
    func corrupt(_ directory: URL, _ values: [String: [UInt8]]) throws {
        rawPut(directory, "records", values.map { (Array($0.key.utf8), $0.value) })
    }

    @Test func corruptRecordsAreErrorsThatNameThemAndLoseNothingElse() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("db")
            // Written by another process, so this one has never opened the environment.
            #expect(try runHelper(["write-count", url.path, "c", "10"]).lines == ["done"])
            let badJSON: [UInt8] = [1, 5] + Array("Entry".utf8) + [0] + Array(#"{"object":"Entry","sequence":"#.utf8)
            try corrupt(url, ["c-3": [0xDE, 0xAD, 0xBE, 0xEF], "c-5": badJSON])

            let database = try LocalDatabase(directory: url)
            await #expect(throws: LocalDatabaseError.self) { let _: Entry? = try await database.read(id: "c-3") }
            do {
                let _: Entry? = try await database.read(id: "c-5")
                Issue.record("reading a corrupt record succeeded")
            } catch let error as LocalDatabaseError {
                guard case let .corruptRecord(id, _) = error else { throw error }
                #expect(id == "c-5")
            }
            let intact: Entry? = try await database.read(id: "c-1")
            #expect(intact?.sequence == 1)
            // Reading all of the type reports the corruption rather than returning a partial list.
            await #expect(throws: LocalDatabaseError.self) { let _: [Entry] = try await database.read() }
            #expect(try await database.count(Entry.self) == 10)

            let report = try await database.verifyIntegrity()
            #expect(report.recordCount == 10)
            #expect(report.problems.count == 2)
            #expect(report.problems.contains { if case .undecodableRecord("c-3", _) = $0 { true } else { false } })
            #expect(report.problems.contains { if case .undecodableRecord("c-5", _) = $0 { true } else { false } })

            // Corrupt records can be deleted or overwritten, and the index follows.
            #expect(try await database.delete(id: "c-3"))
            try await database.write(Record(id: "c-5", data: Note(text: "replaced")))
            let after = try await database.verifyIntegrity()
            #expect(after.isConsistent, "\(after)")
            #expect(try await database.count(Entry.self) == 8)
            let entries: [Entry] = try await database.read()
            #expect(entries.count == 8)
        }
    }
}

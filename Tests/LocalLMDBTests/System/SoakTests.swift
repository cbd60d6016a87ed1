import Foundation
import LocalLMDB
import LocalLMDBTestSupport
import Testing

/// Manual soak test: set LOCALLMDB_SOAK_SECONDS (e.g. 300). Four databases on one directory,
/// each with a worker that runs random transactions (committed or rolled back) and plain writes
/// on its own records while keeping a model of them, plus four reader tasks that check the
/// type index against the records throughout. Every invariant is checked continuously.
@Suite("Soak")
struct SoakTests {
    static let seconds = ProcessInfo.processInfo.environment["LOCALLMDB_SOAK_SECONDS"].flatMap(Double.init)

    actor Tally {
        var operations = 0
        var transactions = 0
        var rollbacks = 0
        var reads = 0
        var integrityChecks = 0
        func add(operations: Int = 0, transactions: Int = 0, rollbacks: Int = 0, reads: Int = 0, integrityChecks: Int = 0) {
            self.operations += operations
            self.transactions += transactions
            self.rollbacks += rollbacks
            self.reads += reads
            self.integrityChecks += integrityChecks
        }
    }

    @Test(.enabled(if: seconds != nil, "set LOCALLMDB_SOAK_SECONDS to run"))
    func manyTasksForMinutes() async throws {
        let seconds = Self.seconds ?? 0
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("db")
            let tally = Tally()
            let deadline = Date().addingTimeInterval(seconds)
            let start = Date()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<4 {
                    group.addTask {
                        let database = try LocalDatabase(directory: url)
                        var model: [String: String] = [:]
                        var step = 0
                        while Date() < deadline {
                            step += 1
                            let inTransaction = step % 3 == 0
                            if inTransaction { try await database.startTransaction() }
                            var draft = model
                            for _ in 0..<Int.random(in: 1...8) {
                                let id = "w\(worker)-\(Int.random(in: 0..<200))"
                                if Bool.random() {
                                    let text = "s\(step)-" + String(repeating: "t", count: Int.random(in: 0...300))
                                    try await database.write(Record(id: id, data: Note(text: text)))
                                    draft[id] = text
                                } else {
                                    try await database.delete(id: id)
                                    draft[id] = nil
                                }
                            }
                            if inTransaction && Int.random(in: 0..<4) == 0 {
                                try await database.rollbackTransaction()
                                await tally.add(rollbacks: 1)
                            } else {
                                if inTransaction {
                                    try await database.commitTransaction()
                                    await tally.add(transactions: 1)
                                }
                                model = draft
                            }
                            // Invariant: this worker's records are exactly its model.
                            if step % 10 == 0 {
                                let notes: [Note] = try await database.read()
                                let ids = Set(try await database.readIDs(Note.self).filter { $0.hasPrefix("w\(worker)-") })
                                #expect(ids == Set(model.keys), "worker \(worker) step \(step)")
                                for (id, text) in model.prefix(5) {
                                    let note: Note? = try await database.read(id: id)
                                    #expect(note?.text == text)
                                }
                                #expect(notes.count >= model.count)
                            }
                            await tally.add(operations: 1)
                        }
                    }
                }
                for _ in 0..<4 {
                    group.addTask {
                        let database = try LocalDatabase(directory: url)
                        while Date() < deadline {
                            let notes: [Note] = try await database.read()
                            let count = try await database.count(Note.self)
                            #expect(notes.count <= count + 2000)
                            let report = try await database.verifyIntegrity()
                            #expect(report.isConsistent, "\(report)")
                            await tally.add(reads: 1, integrityChecks: 1)
                        }
                    }
                }
                try await group.waitForAll()
            }
            let elapsed = Date().timeIntervalSince(start)
            print("Soak: \(Int(elapsed)) s, \(await tally.operations) worker steps, \(await tally.transactions) commits, \(await tally.rollbacks) rollbacks, \(await tally.reads) full reads, \(await tally.integrityChecks) integrity checks")
        }
    }
}

import Foundation
import LocalLMDB
import LocalLMDBTestSupport
import Testing

@Suite("Busy timeout")
struct BusyTimeoutTests {
    @Test func theDefaultIsDocumentedAndLongEnoughForRealTransactions() {
        #expect(LocalDatabase.defaultBusyTimeout == .seconds(30))
    }

    @Test func aTaskWaitingOnItsOwnTransactionThroughAnotherDatabaseGetsBusy() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("db")
            let first = try LocalDatabase(directory: path, busyTimeout: .milliseconds(200))
            let second = try LocalDatabase(directory: path, busyTimeout: .milliseconds(200))
            try await first.startTransaction()
            try await first.write(Record(id: "mine", data: Entry(sequence: 1, payload: "in the transaction")))
            // This task holds the first database's transaction: waiting for it cannot end on its own.
            // (The bound catches a hang; under ThreadSanitizer, with the whole suite sharing two
            // cores, the three 200 ms waits have taken over 20 s to come back.)
            try await withTimeout(seconds: 180) {
                await expectError(\.isBusy) { try await second.write(Record(id: "other", data: Entry(sequence: 2, payload: "p"))) }
                await expectError(\.isBusy) { try await second.startTransaction() }
                await expectError(\.isBusy) { try await second.clearDatabase() }
            }
            #expect(first.transactionActive)
            #expect(!second.transactionActive)
            try await first.commitTransaction()
            // Nothing of the refused calls happened; the second database works normally again.
            #expect(try await second.readIDs(Entry.self) == ["mine"])
            try await second.write(Record(id: "other", data: Entry(sequence: 2, payload: "p")))
            #expect(try await first.count() == 2)
        }
    }

    @Test func aWriteThatWaitsLessThanTheTimeoutSucceeds() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("db")
            let first = try LocalDatabase(directory: path)
            let second = try LocalDatabase(directory: path, busyTimeout: .seconds(20))
            try await first.startTransaction()
            let waiting = Task { try await second.write(Record(id: "later", data: Entry(sequence: 1, payload: "p"))) }
            #expect(await waitForWaitingWrites(1, on: first))
            try await first.write(Record(id: "first", data: Entry(sequence: 0, payload: "p")))
            try await first.commitTransaction()
            #expect(try await waiting.value)
            #expect(try await first.readIDs(Entry.self).sorted() == ["first", "later"])
        }
    }
}

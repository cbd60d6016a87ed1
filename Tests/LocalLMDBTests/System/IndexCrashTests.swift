import Foundation
@testable import LocalLMDB
import LocalLMDBTestSupport
import Testing

@Suite("Indexes across crashes")
struct IndexCrashTests {
    @Test func aWriterKilledAtAnyPointLeavesRecordsAndEntriesAgreeing() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("db")
            for round in 0..<4 {
                let (process, output) = try launchHelper(["ticket-loop", url.path])
                let collector = LineCollector(output)
                // Killed after some acknowledged operations, at no particular point of the next.
                let target = Int.random(in: 3...25)
                #expect(await collector.wait(seconds: 60) { $0.filter { $0.hasPrefix("ack ") }.count >= target })
                process.send(SIGKILL)
                process.waitUntilExit()
                #expect(collector.waitForEnd())

                let database = try LocalDatabase(directory: url)
                // Take the writer lock once, to publish a commit the child may have left unpublished.
                try await database.write(Record(id: "settle", data: Homework(answers: "", grade: round)))
                let report = try await database.verifyIntegrity()
                #expect(report.isConsistent, "round \(round): \(report)")
                let tickets: [Ticket] = try await database.read()
                for queue in (0..<4).map({ "q\($0)" }) {
                    let expected = tickets.filter { $0.queue == queue }.map(\.priority).sorted()
                    let found = try await database.read(Query(Ticket.self).filter("queue", .equals(queue)).sorted(by: "priority")).map(\.priority)
                    #expect(found == expected, "round \(round), queue \(queue)")
                    // Counted from the index's runs, which the crash must leave agreeing too.
                    let counted = try await database.count(Query(Ticket.self).filter("queue", .equals(queue)).filter("priority", .atLeast(0)))
                    #expect(counted == expected.filter { $0 >= 0 }.count, "round \(round), queue \(queue)")
                }
                await database.close()
            }
        }
    }
}

import Foundation
import LocalLMDB
import LocalLMDBTestSupport
import Testing

/// Kills a writing child process at random moments and checks, after each kill, that the
/// database holds exactly what the acknowledged operations wrote (plus, at most, the one
/// operation in flight, whole), and that the type index matches the records.
///
/// CI runs 60 kill points; set LOCALLMDB_CRASH_ROUNDS for a longer run.
@Suite("Crash harness")
struct CrashHarnessTests {
    static var rounds: Int {
        ProcessInfo.processInfo.environment["LOCALLMDB_CRASH_ROUNDS"].flatMap(Int.init) ?? 60
    }

    static func differences(_ actual: CrashState, _ expected: CrashState) -> String {
        let ids = Set(actual.records.keys).union(expected.records.keys).sorted()
        return ids.compactMap { id in
            let found = actual.records[id]
            let wanted = expected.records[id]
            guard found != wanted else { return nil }
            return "\(id): found \(found.map { "\($0.isNote ? "Note" : "Entry") \($0.text.prefix(12))" } ?? "nothing"), expected \(wanted.map { "\($0.isNote ? "Note" : "Entry") \($0.text.prefix(12))" } ?? "nothing")"
        }.joined(separator: "; ")
    }

    @Test func everyAcknowledgedOperationSurvivesSIGKILL() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("db")
            var expected = CrashState()
            var operationsChecked = 0
            var inFlightCommitted = 0
            for round in 0..<Self.rounds {
                let seed = UInt64(round + 1) &* 7919
                let (process, output) = try launchHelper(["crash-loop", url.path, String(seed)])
                try await Task.sleep(nanoseconds: UInt64.random(in: 20_000_000...120_000_000))
                process.send(SIGKILL)
                process.waitUntilExit()
                let acknowledged = completeLines(of: output)
                    .compactMap { $0.hasPrefix("ack ") ? Int($0.dropFirst(4)) : nil }
                    .max() ?? 0

                var afterAcknowledged = expected
                for number in stride(from: 1, through: acknowledged, by: 1) {
                    afterAcknowledged.apply(CrashWorkload.operation(number, seed: seed))
                }
                var withInFlight = afterAcknowledged
                withInFlight.apply(CrashWorkload.operation(acknowledged + 1, seed: seed))

                // Reopen, as an app restarting after the crash would.
                let database = try LocalDatabase(directory: url)
                // If the child died between writing its commit's meta page and publishing the new
                // transaction id, the commit is durable but readers keep seeing the state before it
                // until a process next takes the write lock, when LMDB recovers the dead owner's
                // lock and publishes it. Take the lock once (a record of another type) to settle.
                try await database.write(Record(id: "settle", data: Homework(answers: "", grade: round)))
                let actual = try await CrashWorkload.state(of: database)
                #expect(actual == afterAcknowledged || actual == withInFlight,
                        "round \(round): \(acknowledged) acknowledged; differences: \(Self.differences(actual, afterAcknowledged)); in flight: \(CrashWorkload.operation(acknowledged + 1, seed: seed))")
                if actual != afterAcknowledged && actual == withInFlight { inFlightCommitted += 1 }
                let report = try await database.verifyIntegrity()
                #expect(report.isConsistent, "round \(round): \(report)")
                expected = actual
                operationsChecked += acknowledged
            }
            #expect(operationsChecked > Self.rounds)
            print("Crash harness: \(Self.rounds) kills, \(operationsChecked) acknowledged operations checked, \(inFlightCommitted) in-flight operations found committed")
        }
    }
}

import Foundation
import LocalLMDB
import LocalLMDBTestSupport
import Testing

@Suite("Processes and volume")
struct ProcessTests {
    @Test func aFreshProcessReadsSubclassesAndNestedObjects() async throws {
        try await withDatabase { database, directory in
            try await database.write(Record(id: "sam", data: makeStudent("Sam", debt: 99.5)))
            try await database.write(Record(id: "ada", data: Teacher(firstName: "Ada", lastName: "L", salary: 1)))
            let student = try runHelper(["describe", directory.path, "sam"])
            #expect(student.status == 0)
            #expect(student.lines == ["Student Sam Pham teacher=Teacher:Ada:98000.25 homework=42:7,unknown:nil subjects=Maths,Physics"])
            let teacher = try runHelper(["describe", directory.path, "ada"])
            #expect(teacher.lines == ["Teacher Ada L"])
        }
    }

    @Test func anotherProcessWritesAndThisOneReads() async throws {
        try await withDatabase { database, directory in
            let result = try runHelper(["write-count", directory.path, "child", "500"])
            #expect(result.lines == ["done"])
            #expect(try await database.count(Entry.self) == 500)
            let entry: Entry? = try await database.read(id: "child-499")
            #expect(entry?.sequence == 499)
            try await database.write(Record(id: "parent", data: Entry(sequence: 0, payload: "")))
            #expect(try runHelper(["count", directory.path]).lines == ["501"])
        }
    }

    @Test func everyAcknowledgedWriteSurvivesSIGKILL() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("db")
            var acknowledged: Set<String> = []
            for round in 0..<3 {
                let (process, output) = try launchHelper(["write-loop", url.path, "r\(round)"])
                // Let it write for a while, then kill it mid-write.
                try await Task.sleep(nanoseconds: UInt64.random(in: 150_000_000...400_000_000))
                process.send(SIGKILL)
                #expect(process.waitUntilExit() == .signal(SIGKILL))
                for line in completeLines(of: output) {
                    let words = line.split(separator: " ").map(String.init)
                    if words.first == "ack" || words.first == "txn" { acknowledged.formUnion(words.dropFirst()) }
                }
            }
            #expect(acknowledged.count > 10)
            let database = try LocalDatabase(directory: url)
            let stored = Set(try await database.readIDs(Entry.self))
            #expect(acknowledged.isSubset(of: stored))
            let report = try await database.verifyIntegrity()
            #expect(report.isConsistent, "\(report)")
            #expect(report.recordCount == stored.count)
            // Transactions are all or nothing: every transaction's four parts are there, or none.
            let transactionGroups = Dictionary(grouping: stored.filter { $0.contains("-t") }) { $0.split(separator: "-").prefix(2).joined(separator: "-") }
            #expect(transactionGroups.values.allSatisfy { $0.count == 4 })
        }
    }

    @Test func anObjectWith150000Elements() async throws {
        try await withDatabase { database, _ in
            let everything = Everything()
            everything.ints = Array(0..<150_000)
            everything.strings = (0..<150_000).map { "s\($0)" }
            try await database.write(Record(id: "big", data: everything))
            let read = try #require(try await database.read(id: "big") as Everything?)
            #expect(read.ints == everything.ints)
            #expect(read.strings == everything.strings)
        }
    }

    @Test func twoHundredMegabytesWithNoConfiguration() async throws {
        try await withDatabase { database, _ in
            let payload = String(repeating: "z", count: 1 << 20)  // 1 MiB per record
            for index in 0..<200 {
                try await database.write(Record(id: "mb\(index)", data: Entry(sequence: index, payload: payload)))
            }
            // And a transaction large enough to need the map grown while it is open.
            try await database.startTransaction()
            for index in 200..<260 {
                try await database.write(Record(id: "mb\(index)", data: Entry(sequence: index, payload: payload)))
            }
            try await database.commitTransaction()
            #expect(try await database.count(Entry.self) == 260)
            let last: Entry? = try await database.read(id: "mb259")
            #expect(last?.payload.count == 1 << 20)
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }
}

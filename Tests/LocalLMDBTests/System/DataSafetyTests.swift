import CLMDB
import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import LocalLMDBTestSupport
import Testing

/// Reads a child process's output lines as they come, on a thread of its own, so that the child
/// never blocks on a full pipe.
final class LineCollector: Sendable {
    private let lines = Locked<[String]>([])
    private let finished = DispatchSemaphore(value: 0)

    init(_ pipe: PipeReader) {
        Thread { [self] in
            var pending = Data()
            while true {
                let data = pipe.readSome()
                if data.isEmpty { break }
                pending.append(contentsOf: data)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending.removeSubrange(pending.startIndex...newline)
                    lines.withLock { $0.append(line) }
                }
            }
            finished.signal()
        }.start()
    }

    var all: [String] { lines.withLock { $0 } }

    /// Waits (polling) until `condition` holds for the lines, for at most `seconds`.
    func wait(seconds: Double = 30, until condition: ([String]) -> Bool) async -> Bool {
        await waitUntil(seconds: seconds) { condition(all) }
    }

    /// Waits for the end of the output (the process ended), for at most `seconds`.
    func waitForEnd(seconds: Double = 30) -> Bool {
        guard finished.wait(timeout: .now() + seconds) == .success else { return false }
        finished.signal()  // Later waits return at once.
        return true
    }
}

/// A `write-loop` helper writing to a database as long as it lives, waiting for the test's
/// transactions as long as they take (a slow run), its output collected.
final class WritingChild: Sendable {
    let process: ChildProcess
    let lines: LineCollector

    init(_ directory: URL) throws {
        let (process, output) = try launchHelper(["write-loop", directory.path, "c"], environment: ["HELPER_BUSY_SECONDS": "600"])
        self.process = process
        lines = LineCollector(output)
    }

    /// The ids it was told are stored.
    var acknowledged: [String] { acknowledgedIDs(lines.all) }

    /// Kills it and waits for it and its output to end (again: nothing).
    @discardableResult
    func stop() -> Bool {
        process.send(SIGKILL)
        process.waitUntilExit()
        return lines.waitForEnd()
    }
}

/// The ids acknowledged by a `write-loop` helper, from its `ack` and `txn` lines.
func acknowledgedIDs(_ lines: [String]) -> [String] {
    lines.flatMap { line -> [String] in
        let words = line.split(separator: " ").map(String.init)
        guard let kind = words.first, kind == "ack" || kind == "txn" else { return [] }
        return Array(words.dropFirst())
    }
}

@Suite("Data safety: transactions, the change feed and observation")
struct DataSafetyTests {
    // MARK: A transaction that grows the map

    /// Issue item 1: a user transaction that fills the map is rebuilt in a larger one; another
    /// process must not commit in between (its writes would be undone by the replay).
    @Test func aTransactionGrowingTheMapKeepsOtherProcessesOut() async throws {
        try await withDatabase { database, directory in
            try await database.write(Record(id: "start", data: Note(text: "x")))
            let start = try database.changeToken()
            let child = try WritingChild(directory)
            defer { child.stop() }
            let lines = child.lines
            #expect(await lines.wait { acknowledgedIDs($0).count >= 20 })
            let payload = String(repeating: "m", count: 1 << 20)
            for round in 0..<2 {
                try await database.startTransaction()
                let begun = try database.changeToken()
                #expect(try await database.delete(Entry.self) >= 0)
                // 32 MiB in a map of 16 MiB at first: the transaction is rebuilt as it grows.
                for index in 0..<32 { try await database.write(Record(id: "big-\(round)-\(index)", data: Note(text: payload))) }
                try await database.commitTransaction()
                // Nobody committed between this transaction's begin and its commit.
                let feed = try database.changes(since: begun)
                #expect(feed.commits.first?.changes.contains(.written(id: "big-\(round)-0", className: "Note")) == true)
                let acknowledged = acknowledgedIDs(lines.all).count
                #expect(await lines.wait(seconds: 120) { acknowledgedIDs($0).count >= acknowledged + 10 }, "the child stopped: \(lines.all.suffix(3))")
            }
            #expect(child.stop())
            // Every record the child was told is stored is there, unless a later commit of this
            // process deleted it: replay the log to tell which.
            let feed = try database.changes(since: start)
            var entries = Set<String>()
            for commit in feed.commits {
                for change in commit.changes {
                    switch change {
                    case let .written(id, "Entry"): entries.insert(id)
                    case let .deleted(id, "Entry"): entries.remove(id)
                    case .typeDeleted("Entry"), .cleared: entries.removeAll()
                    default: break
                    }
                }
            }
            let stored = Set(try await database.readIDs(Entry.self))
            #expect(stored == entries)
            let afterLastDelete = feed.commits.lastIndex { $0.changes.contains(.typeDeleted(className: "Entry")) } ?? -1
            let writtenAfter = Set(feed.commits.dropFirst(afterLastDelete + 1).flatMap(\.changes).compactMap { change -> String? in
                if case let .written(id, "Entry") = change { return id }
                return nil
            })
            #expect(writtenAfter.isSubset(of: stored))
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }

    /// Issue item 1, for writers that do not take LocalLMDB's writer lock (another LMDB
    /// program): a commit of theirs between the end of the transaction's LMDB transaction and
    /// its rebuild fails the transaction instead of being replayed over.
    @Test func aForeignCommitWhileTheMapGrowsFailsTheTransaction() async throws {
        try await withDatabase { database, directory in
            try await database.write(Record(id: "a", data: Entry(sequence: 1, payload: "kept")))
            let coordinator = database.session.engine.coordinator
            let committed = Locked(false)
            try await database.startTransaction()
            _ = try await database.delete(Entry.self)
            database.session.engine.thread.submit {
                coordinator.beforeRebuild = {
                    // A real second process commits in the gap, with raw LMDB.
                    let result = try? runHelper(["raw-put", directory.path, "foreign", "k", "v"])
                    committed.withLock { $0 = result?.lines == ["done"] }
                }
            }
            let payload = String(repeating: "g", count: 1 << 20)
            await expectError({ if case .transactionFailed = $0 { true } else { false } }) {
                for index in 0..<40 { try await database.write(Record(id: "g\(index)", data: Note(text: payload))) }
                try await database.commitTransaction()
            }
            #expect(committed.withLock { $0 })
            try await database.rollbackTransaction()
            // Nothing of the transaction was kept; the record it deleted is still there.
            let kept: Entry? = try await database.read(id: "a")
            #expect(kept?.payload == "kept")
            #expect(try await database.count(Note.self) == 0)
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }

    // MARK: Read-your-writes

    /// Issue item 2: reads of the records written in a transaction see them while another task
    /// commits it (the session must not fall back to a snapshot from before the commit), also
    /// while another process writes to the database all along.
    @Test func readsSeeTheirOwnWritesWhileTheTransactionCommits() async throws {
        try await withDatabase { database, directory in
            let child = try WritingChild(directory)
            defer { child.stop() }
            let lines = child.lines
            #expect(await lines.wait { acknowledgedIDs($0).count >= 5 })
            for round in 0..<8 {
                try await database.startTransaction()
                let ids = (0..<300).map { "r\(round)-\($0)" }
                for id in ids { try await database.write(Record(id: id, data: Note(text: id))) }
                let committing = Locked(false)
                let commit = Task {
                    committing.withLock { $0 = true }
                    try await database.commitTransaction()
                }
                while !committing.withLock({ $0 }) { await Task.yield() }
                var missing = 0
                for id in ids {
                    let note: Note? = try await database.read(id: id)
                    if note?.text != id { missing += 1 }
                }
                try await commit.value
                #expect(missing == 0, "round \(round)")
            }
            #expect(child.stop())
            // The other process's acknowledged writes are all there.
            let stored = Set(try await database.readIDs(Entry.self))
            #expect(Set(acknowledgedIDs(lines.all)).isSubset(of: stored))
        }
    }

    @Test func theSynchronousFaceReadsItsOwnWritesWhileTheTransactionCommits() async throws {
        try await withTemporaryDirectory { directory in
            let database = try SerializationDatabase(directory: directory.appendingPathComponent("db"))
            for round in 0..<8 {
                #expect(database.startTransaction(override: false))
                let ids = (0..<300).map { "r\(round)-\($0)" }
                for id in ids { _ = database.write(Record(id: id, data: Note(text: id))) }
                let committing = Locked(false)
                let committed = Locked(false)
                let done = DispatchSemaphore(value: 0)
                Thread {
                    committing.withLock { $0 = true }
                    let result = database.commitTransaction()
                    committed.withLock { $0 = result }
                    done.signal()
                }.start()
                while !committing.withLock({ $0 }) { sched_yield() }
                var missing = 0
                for id in ids {
                    let note: Note? = database.read(id: id)
                    if note?.text != id { missing += 1 }
                }
                #expect(done.wait(timeout: .now() + 60) == .success)
                #expect(committed.withLock { $0 })
                #expect(missing == 0, "round \(round)")
            }
        }
    }

    // MARK: The change feed

    /// Replays a feed as a sync client following classes would: each class's ids after the commits.
    static func replay(_ feed: ChangeFeed, into classes: inout [String: Set<String>]) {
        for commit in feed.commits {
            for change in commit.changes {
                switch change {
                case let .written(id, className):
                    // Class by class: a record that left another class is logged deleted there.
                    classes[className, default: []].insert(id)
                case let .deleted(id, className):
                    classes[className]?.remove(id)
                case let .typeDeleted(className):
                    classes[className] = []
                case .cleared:
                    classes = [:]
                }
            }
        }
    }

    /// Issue item 3: a record that changes class within one commit is logged so that replaying
    /// the log in order gives each class its true ids.
    @Test func aClassChangeWithinOneCommitIsLoggedInItsPlace() async throws {
        try await withDatabase { database, _ in
            let start = try database.changeToken()
            try await database.write(contentsOf: [Record(id: "x", data: Note(text: "a note")), Record(id: "x", data: Note(text: "again"))])
            let feed1 = try database.changes(since: start)
            #expect(feed1.commits.map(\.changes) == [[.written(id: "x", className: "Note"), .written(id: "x", className: "Note")]])
            // A batch of mixed classes: `write(contentsOf:)` takes one type, so go through a transaction.
            let before = try database.changeToken()
            try await database.startTransaction()
            // Both classes are claimed in the transaction, so the writes below are buffered and
            // reach the store as one put.
            try await database.write(Record(id: "warm-e", data: Entry(sequence: 0, payload: "")))
            try await database.write(Record(id: "warm-n", data: Note(text: "")))
            try await database.write(Record(id: "x", data: Entry(sequence: 1, payload: "now an entry")))
            try await database.write(Record(id: "x", data: Note(text: "a note again")))
            try await database.write(Record(id: "y", data: Entry(sequence: 2, payload: "y")))
            try await database.commitTransaction()
            let feed2 = try database.changes(since: before)
            #expect(feed2.commits.map(\.changes) == [[
                .written(id: "warm-e", className: "Entry"), .written(id: "warm-n", className: "Note"),
                .deleted(id: "x", className: "Note"), .written(id: "x", className: "Entry"),
                .deleted(id: "x", className: "Entry"), .written(id: "x", className: "Note"),
                .written(id: "y", className: "Entry"),
            ]])
            var classes: [String: Set<String>] = [:]
            Self.replay(try database.changes(since: start), into: &classes)
            #expect(classes["Note"] == Set(try await database.readIDs(Note.self)))
            #expect(classes["Entry"] == Set(try await database.readIDs(Entry.self)))
        }
    }

    /// Issue item 3, as a rule: random sequences of writes (single, batches, in transactions
    /// whose writes are buffered, rolled back), class changes and deletes, replayed from the
    /// feed, give every class exactly the ids it holds.
    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func replayingTheFeedGivesEachClassItsIDs(seed: UInt64) async throws {
        try await withDatabase { database, _ in
            var random = SplitMix(seed: seed)
            let start = try database.changeToken()
            let ids = (0..<4).map { "id\($0)" }
            for _ in 0..<100 {
                let id = ids[Int(random.next() % UInt64(ids.count))]
                switch random.next() % 9 {
                case 0: try await database.write(Record(id: id, data: Note(text: "n")))
                case 1: try await database.write(Record(id: id, data: Entry(sequence: 0, payload: "e")))
                case 2:
                    try await database.write(contentsOf: (0..<Int(random.next() % 5)).map { _ in
                        Record(id: ids[Int(random.next() % UInt64(ids.count))], data: Note(text: "b"))
                    })
                case 3: try await database.delete(id: id)
                case 4: _ = try await database.delete(Note.self)
                case 5, 6:
                    try await database.startTransaction()
                    // Claims both classes, so that the writes after it are buffered into one put.
                    try await database.write(Record(id: ids[Int(random.next() % UInt64(ids.count))], data: Note(text: "c")))
                    try await database.write(Record(id: ids[Int(random.next() % UInt64(ids.count))], data: Entry(sequence: 2, payload: "c")))
                    for _ in 0..<Int(random.next() % 8) {
                        let other = ids[Int(random.next() % UInt64(ids.count))]
                        switch random.next() % 7 {
                        case 0, 1, 2: try await database.write(Record(id: other, data: Note(text: "t")))
                        case 3, 4: try await database.write(Record(id: other, data: Entry(sequence: 1, payload: "t")))
                        case 5: try await database.delete(id: other)
                        default: _ = try await database.delete(Entry.self)
                        }
                    }
                    if random.next() % 4 == 0 { try await database.rollbackTransaction() } else { try await database.commitTransaction() }
                case 7: _ = try await database.delete(Entry.self)
                default: if random.next() % 6 == 0 { _ = try await database.clearDatabase() }
                }
            }
            var classes: [String: Set<String>] = [:]
            Self.replay(try database.changes(since: start), into: &classes)
            #expect(classes["Note", default: []] == Set(try await database.readIDs(Note.self)), "seed \(seed)")
            #expect(classes["Entry", default: []] == Set(try await database.readIDs(Entry.self)), "seed \(seed)")
        }
    }

    /// `Change`s of two spellings of one text (NFC and NFD) are two changes, as they are two records.
    @Test func changesOfCanonicallyEquivalentIDsAreDistinct() {
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        #expect(composed == decomposed)  // Swift's String equality
        let changes: Set<Change> = [.written(id: composed, className: "Note"), .written(id: decomposed, className: "Note")]
        #expect(changes.count == 2)
        #expect(Change.typeDeleted(className: composed) != .typeDeleted(className: decomposed))
        #expect(Change.cleared == .cleared)
        #expect(Change.written(id: "a", className: "N") == .written(id: "a", className: "N"))
        #expect(Change.written(id: "a", className: "N") != .deleted(id: "a", className: "N"))
    }

    // MARK: Observation

    /// Issue item 4: an observed id holding a subclass is seen deleted when its class is.
    @Test func anObservedRecordDeletedWithItsClassIsSeenGone() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "s", data: makeStudent("Sam")))
            let seen = Collected<String>()
            let observer = Task {
                for try await person in database.observe(Person.self, id: "s") { seen.append(person?.firstName ?? "nil") }
            }
            defer { observer.cancel() }
            #expect(await seen.wait(seconds: 30) { $0 == ["Sam"] })
            #expect(try await database.delete(Student.self) == 1)
            #expect(await seen.wait(seconds: 30) { $0 == ["Sam", "nil"] })
        }
    }

    /// Issue item 4, decided: an observed id rewritten as an unrelated class yields nil (it is no
    /// longer there as the observed class), and the observation goes on.
    @Test func anObservedIDRewrittenAsAnotherClassYieldsNil() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "n", data: Note(text: "note")))
            var iterator = database.observe(Note.self, id: "n").makeAsyncIterator()
            #expect(try await iterator.next()??.text == "note")
            try await database.write(Record(id: "n", data: Entry(sequence: 1, payload: "entry")))
            if case .some(.none) = try await iterator.next() {} else { Issue.record("expected nil while n holds an Entry") }
            try await database.write(Record(id: "n", data: Note(text: "note again")))
            #expect(try await iterator.next()??.text == "note again")
        }
    }
}

@Suite("Data safety: a writer killed mid-commit")
struct UnpublishedCommitTests {
    /// Issue item 10: a commit whose writer died before publishing it reaches this process's
    /// observers within the poll's delay, without anyone writing.
    @Test func aDeadWritersCommitReachesObserversWithoutAnotherWrite() async throws {
        try await withDatabase { database, directory in
            try await database.write(Record(id: "before", data: Note(text: "x")))
            let result = try runHelper(["unpublish", directory.path, "late"])
            #expect(result.lines.first?.hasPrefix("unpublished") == true)
            let seen = Collected<String>()
            let observer = Task {
                for try await note in database.observe(Note.self, id: "late") { seen.append(note?.text ?? "nil") }
            }
            defer { observer.cancel() }
            let feed = Collected<CommittedChanges>()
            let start = try database.changeToken()
            let follower = Task {
                for try await commit in database.changes(of: Note.self) { feed.append(commit) }
            }
            defer { follower.cancel() }
            // Within the poll's delay (50 ms) when the pool has a thread for the observer; the bound
            // is for a suite that keeps the pool busy.
            #expect(await seen.wait(seconds: 60) { $0.last == "unpublished" })
            // The change feed has the commit too, and nothing else was written.
            let changes = try database.changes(since: ChangeToken(logID: start.logID, sequence: start.sequence - 1))
            #expect(changes.commits.last?.changes == [.written(id: "late", className: "Note")])
            let late: Note? = try await database.read(id: "late")
            #expect(late?.text == "unpublished")
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }

    /// Issue item 10: a process that opens the database after such a crash sees the commit.
    @Test func aDeadWritersCommitIsVisibleToAProcessThatOpensTheDatabase() async throws {
        try await withDatabase { database, directory in
            try await database.write(Record(id: "before", data: Note(text: "x")))
            #expect(try runHelper(["unpublish", directory.path, "late"]).lines.first?.hasPrefix("unpublished") == true)
            #expect(try runHelper(["read-note", directory.path, "late"]).lines == ["unpublished"])
        }
    }
}

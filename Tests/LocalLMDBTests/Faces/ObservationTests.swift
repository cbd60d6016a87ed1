import Foundation
#if canImport(Observation)
import Observation
#endif
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import LocalLMDBTestSupport
import Testing

/// Collects the elements of an async sequence from a task, for tests to wait on.
final class Collected<Element: Sendable>: Sendable {
    private let state = Locked<[Element]>([])
    func append(_ element: Element) { state.withLock { $0.append(element) } }
    var elements: [Element] { state.withLock { $0 } }

    /// Waits (polling) until `condition` holds for the elements, for at most `seconds`.
    func wait(seconds: Double = 10, until condition: ([Element]) -> Bool) async -> Bool {
        await waitUntil(seconds: seconds) { condition(elements) }
    }
}

@Suite("Change feed and observation")
struct ObservationTests {
    /// Consumes `sequence` into `collected` in a task.
    func consume(_ sequence: ChangeSequence, into collected: Collected<CommittedChanges>) -> Task<Void, any Error> {
        Task {
            for try await commit in sequence { collected.append(commit) }
        }
    }

    @Test func everyKindOfChangeComesOncePerCommitInOrder() async throws {
        try await withDatabase { database, _ in
            let collected = Collected<CommittedChanges>()
            let task = consume(database.changes(), into: collected)
            defer { task.cancel() }
            try await database.write(Record(id: "a", data: Note(text: "1")))
            try await database.startTransaction()
            try await database.write(Record(id: "b", data: Note(text: "2")))
            try await database.write(Record(id: "c", data: Entry(sequence: 1, payload: "p")))
            try await database.commitTransaction()
            try await database.delete(id: "a")
            try await database.delete(id: "nothing")  // changes nothing: no commit in the log
            try await database.delete(Note.self)
            try await database.clearDatabase()
            try await database.startTransaction()
            for index in 0..<1000 { try await database.write(Record(id: "t\(index)", data: Entry(sequence: index, payload: "p"))) }
            try await database.commitTransaction()
            #expect(await collected.wait { $0.count == 6 })
            let commits = collected.elements
            #expect(commits.map(\.changes).prefix(5) == [
                [.written(id: "a", className: "Note")],
                [.written(id: "b", className: "Note"), .written(id: "c", className: "Entry")],
                [.deleted(id: "a", className: "Note")],
                [.typeDeleted(className: "Note")],
                [.cleared],
            ])
            #expect(commits.last?.changes.count == 1000)
            #expect(commits.last?.changes.first == .written(id: "t0", className: "Entry"))
            let sequences = commits.map(\.token.sequence)
            #expect(sequences == sequences.sorted() && Set(sequences).count == sequences.count)
            #expect(commits.last?.token == (try database.changeToken()))
        }
    }

    @Test func rolledBackWorkIsNeverReported() async throws {
        try await withDatabase { database, _ in
            let collected = Collected<CommittedChanges>()
            let task = consume(database.changes(), into: collected)
            defer { task.cancel() }
            try await database.startTransaction()
            try await database.write(Record(id: "rolled", data: Note(text: "back")))
            _ = try await database.count()  // applies the buffered write inside the transaction
            try await database.rollbackTransaction()
            try await database.write(Record(id: "kept", data: Note(text: "committed")))
            // A later commit arrives after it, with nothing of the rolled-back one in between.
            try await database.write(Record(id: "marker", data: Note(text: "after")))
            #expect(await collected.wait { $0.count >= 2 })
            #expect(collected.elements.map(\.changes) == [[.written(id: "kept", className: "Note")], [.written(id: "marker", className: "Note")]])
        }
    }

    @Test func concurrentWritersCommitsArriveEachOnceInCommitOrder() async throws {
        try await withDatabase { database, _ in
            let collected = Collected<CommittedChanges>()
            let task = consume(database.changes(of: Entry.self), into: collected)
            defer { task.cancel() }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<8 {
                    group.addTask {
                        for index in 0..<50 {
                            try await database.write(Record(id: "w\(writer)-\(index)", data: Entry(sequence: index, payload: "p")))
                            try await database.write(Record(id: "n\(writer)-\(index)", data: Note(text: "not an entry")))
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(await collected.wait { $0.flatMap(\.changes).count >= 400 })
            let changes = collected.elements.flatMap(\.changes)
            #expect(changes.count == 400)
            #expect(Set(changes).count == 400)
            #expect(changes.allSatisfy { if case .written(_, "Entry") = $0 { true } else { false } })
            // Each writer's own writes arrive in the order it made them.
            for writer in 0..<8 {
                let mine = changes.compactMap { change -> Int? in
                    guard case let .written(id, _) = change, id.hasPrefix("w\(writer)-") else { return nil }
                    return Int(id.dropFirst("w\(writer)-".count))
                }
                #expect(mine == Array(0..<50))
            }
            let sequences = collected.elements.map(\.token.sequence)
            #expect(sequences == sequences.sorted())
        }
    }

    @Test func observingARecordGivesTheCurrentValueThenTheLatest() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "n", data: Note(text: "first")))
            var iterator = database.observe(Note.self, id: "n").makeAsyncIterator()
            #expect(try await iterator.next()??.text == "first")
            // A commit that does not touch it wakes nothing up; many commits while the consumer
            // is away give it the latest value, not a backlog.
            try await database.write(Record(id: "other", data: Note(text: "unrelated")))
            for index in 0..<50 { try await database.write(Record(id: "n", data: Note(text: "v\(index)"))) }
            #expect(try await iterator.next()??.text == "v49")
            try await database.delete(id: "n")
            if case .some(.none) = try await iterator.next() {} else { Issue.record("expected nil after the delete") }
            try await database.write(Record(id: "n", data: Note(text: "again")))
            #expect(try await iterator.next()??.text == "again")
        }
    }

    @Test func observingATypeFollowsItsRecordsOnly() async throws {
        try await withDatabase { database, _ in
            var iterator = database.observeAll(Note.self).makeAsyncIterator()
            #expect(try await iterator.next()?.count == 0)
            try await database.write(Record(id: "e", data: Entry(sequence: 1, payload: "not a note")))
            try await database.write(contentsOf: [Record(id: "a", data: Note(text: "a")), Record(id: "b", data: Note(text: "b"))])
            #expect(try await iterator.next()?.map(\.text) == ["a", "b"])
            try await database.clearDatabase()
            #expect(try await iterator.next()?.count == 0)
        }
    }

    @Test func cancellingTheConsumerReleasesTheObservation() async throws {
        try await withDatabase { database, _ in
            let notifier = database.session.engine.notifier
            let started = Collected<Int>()
            let observing = Task {
                for try await notes in database.observeAll(Note.self) { started.append(notes.count) }
            }
            let changing = Task {
                for try await commit in database.changes() { _ = commit }
            }
            // The first value can be slow to come when this test starts among the suite's first,
            // under ThreadSanitizer on 2 cores (it waited over 10 s in two CI runs); the wait
            // ends as soon as it comes.
            #expect(await started.wait(seconds: 60) { !$0.isEmpty })
            #expect(await Collected<Int>().wait(seconds: 5) { _ in notifier.activity == (2, true) })
            observing.cancel()
            changing.cancel()
            _ = await observing.result
            _ = await changing.result
            #expect(await Collected<Int>().wait(seconds: 5) { _ in notifier.activity == (0, false) })
        }
    }

    /// Commits of another process arrive within the poll interval (50 ms) plus a read. The
    /// consumer runs on a thread of its own, so that other tests keeping the cooperative pool
    /// busy do not delay it; the bound asserted leaves room for a loaded machine.
    /// The log's encoding keeps every change in order (runs of one class share its name), and
    /// decoding bytes it did not write never crashes: it gives nil or some changes.
    @Test func logEntriesRoundTripInOrderAndBadBytesAreRefused() {
        let entry: [LoggedChange] = [
            .written(id: "a", className: "Note"), .written(id: "b", className: "Note"), .written(id: "c", className: "Entry"),
            .written(id: "d", className: "Note"), .deleted(id: "a", className: "Note"), .typeDeleted(className: "Entry"),
            .cleared, .written(id: String(repeating: "é", count: 300), className: ""), .deleted(id: "", className: "X"),
            .written(id: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F", className: "Note"),
            .written(id: "e621e1f8-c36c-495a-93fc-0c247a3e6e5f", className: "Note"),
            .written(id: UUID().uuidString, className: "Note"), .deleted(id: UUID().uuidString, className: "Note"),
        ]
        #expect(ChangeLog.encode(entry).withUnsafeBytes { ChangeLog.decode($0) } == entry)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            var bytes = ChangeLog.encode(entry)
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            if Bool.random(using: &generator) { bytes.removeLast(Int.random(in: 0..<bytes.count, using: &generator)) }
            _ = bytes.withUnsafeBytes { ChangeLog.decode($0) }
        }
        let huge: [UInt8] = [1, 1, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F]
        #expect(huge.withUnsafeBytes { ChangeLog.decode($0) } == nil)
    }

    /// A record written again as another class leaves its old class: the log says so, and
    /// observers of the old class see it go.
    @Test func aRecordThatChangesClassIsReportedAsLeavingItsOldClass() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "x", data: Note(text: "a note")))
            let collected = Collected<CommittedChanges>()
            let task = consume(database.changes(of: Note.self), into: collected)
            defer { task.cancel() }
            var notes = database.observeAll(Note.self).makeAsyncIterator()
            #expect(try await notes.next()?.count == 1)
            try await database.write(Record(id: "x", data: Entry(sequence: 1, payload: "now an entry")))
            #expect(try await notes.next()?.count == 0)
            #expect(await collected.wait { !$0.isEmpty })
            #expect(collected.elements.first?.changes == [.deleted(id: "x", className: "Note")])
            let feed = try database.changes(since: ChangeToken(logID: try database.changeToken().logID, sequence: 1))
            #expect(feed.commits.last?.changes == [.deleted(id: "x", className: "Note"), .written(id: "x", className: "Entry")])
        }
    }

    /// The log's identity is made once: opening an existing database writes nothing (a write at
    /// every open would also make opening fail where writing cannot, such as on a full disk).
    @Test func reopeningADatabaseWritesNothing() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("db")
            let first = try LocalDatabase(directory: path)
            try await first.write(Record(id: "a", data: Note(text: "a")))
            let token = try first.changeToken()
            await first.close()
            let second = try LocalDatabase(directory: path)
            let afterOpen = second.session.engine.environment.lastTransactionID
            await second.close()
            let third = try LocalDatabase(directory: path)
            #expect(third.session.engine.environment.lastTransactionID == afterOpen)
            #expect(try third.changeToken() == token)
            await third.close()
        }
    }

    @Test func databasesOnOneDirectoryMustAgreeOnTheChangeLogsLimits() async throws {
        try await withTemporaryDirectory { directory in
            var small = DatabaseConfiguration()
            small.changeLogCommits = 5
            let first = try LocalDatabase(directory: directory, configuration: small)
            #expect(throws: LocalDatabaseError.self) { try LocalDatabase(directory: directory) }
            await first.close()
        }
    }

    @Test func closingTheDatabaseEndsItsObservationsWithAnError() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory.appendingPathComponent("db"))
            var iterator = database.observeAll(Note.self).makeAsyncIterator()
            #expect(try await iterator.next()?.isEmpty == true)
            let waiting = Task {
                var iterator = iterator
                return try await iterator.next()?.count
            }
            try await Task.sleep(for: .milliseconds(50))
            await database.close()
            let outcome = await waiting.result
            guard case let .failure(error) = outcome, case .closed? = error as? LocalDatabaseError else {
                Issue.record("expected closed, got \(outcome)")
                return
            }
        }
    }

    @Test func anotherProcesssCommitsAreObservedPromptly() async throws {
        try await withDatabase { database, directory in
            let arrivals = Collected<(changes: Int, at: Date)>()
            let sequence = database.changes(of: Entry.self)
            let task = Task(executorPreference: DedicatedThreadExecutor()) {
                var total = 0
                for try await commit in sequence {
                    total += commit.changes.count
                    arrivals.append((total, Date()))
                }
            }
            defer { task.cancel() }
            var iterator = database.observeAll(Entry.self).makeAsyncIterator()
            #expect(try await iterator.next()?.count == 0)
            let result = try runHelper(["write-count", directory.path, "child", "20"])
            let done = Date()  // the child's commits are durable
            #expect(result.lines == ["done"])
            #expect(await arrivals.wait { $0.last?.changes == 20 })
            let latency = (arrivals.elements.last?.at ?? .distantFuture).timeIntervalSince(done)
            #expect(latency < 0.3, "observed \(latency) s after the other process committed")
            #expect(try await iterator.next()?.count == 20)
        }
    }

    @Test func aFeedConsumerMissesNothingAcrossACrashOfTheWriter() async throws {
        try await withDatabase { database, directory in
            let start = try database.changeToken()
            // At most 2,000 commits, well within the change log's 10,000: a starved test process
            // may read the third line long after the child wrote it.
            let (process, output) = try launchHelper(["write-loop", directory.path, "crash"], environment: ["HELPER_WRITE_LIMIT": "2000"])
            // Killed once it has acknowledged some writes (lines of output).
            let lines = LineCollector(output)
            #expect(await lines.wait { $0.count >= 3 })
            process.send(SIGKILL)
            process.waitUntilExit()
            #expect(lines.waitForEnd())
            let acknowledged = lines.all.filter { $0 != "limit" }.flatMap { $0.split(separator: " ").dropFirst().map(String.init) }
            #expect(!acknowledged.isEmpty)
            // Every write the killed process was told was durable is in the feed, exactly once.
            let feed = try database.changes(since: start)
            let written = feed.commits.flatMap(\.changes).compactMap { change -> String? in
                if case let .written(id, _) = change { id } else { nil }
            }
            #expect(Set(acknowledged).isSubset(of: Set(written)))
            #expect(Set(written).count == written.count)
            #expect(try await database.count() == written.count)
            #expect(feed.token == (try database.changeToken()))
        }
    }

    @Test func aFeedResumesFromItsTokenAndRefusesOnesItCannotHonour() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("db")
            var configuration = DatabaseConfiguration()
            configuration.changeLogCommits = 5
            var database: LocalDatabase? = try LocalDatabase(directory: path, configuration: configuration)
            let start = try #require(try database?.changeToken())
            try await database?.write(Record(id: "1", data: Note(text: "one")))
            let afterOne = try #require(try database?.changeToken())
            try await database?.write(Record(id: "2", data: Note(text: "two")))
            await database?.close()
            database = nil

            // After a restart, the feed goes on from the token kept.
            let reopened = try LocalDatabase(directory: path, configuration: configuration)
            let feed = try reopened.changes(since: afterOne)
            #expect(feed.commits.map(\.changes) == [[.written(id: "2", className: "Note")]])
            #expect(try reopened.changes(since: feed.token).commits.isEmpty)
            #expect(try reopened.changes(since: start).commits.count == 2)

            // The log keeps five commits: older tokens are refused, with a typed error.
            for index in 0..<10 { try await reopened.write(Record(id: "n\(index)", data: Note(text: "n"))) }
            await expectError({ if case .changesUnavailable = $0 { true } else { false } }) { _ = try reopened.changes(since: start) }
            let log = try #require(reopened.session.engine.store.changeLog)
            let bounds = try reopened.session.snapshot { transaction throws(DatabaseError) in try log.bounds(in: transaction) }
            #expect(bounds.first == 8 && bounds.last == 12)
            // So are another database's tokens, and tokens ahead of the log.
            try await withDatabase { other, _ in
                let foreign = try other.changeToken()
                await expectError({ if case .changesUnavailable = $0 { true } else { false } }) { _ = try reopened.changes(since: foreign) }
            }
            let ahead = ChangeToken(logID: start.logID, sequence: 1000)
            await expectError({ if case .changesUnavailable = $0 { true } else { false } }) { _ = try reopened.changes(since: ahead) }
        }
    }

    @Test func theSynchronousFaceReadsTheFeedAndObserves() async throws {
        try await withTemporaryDirectory { directory in
            let database = try SerializationDatabase(directory: directory.appendingPathComponent("db"))
            let start = try #require(database.changeToken())
            database.write(Record(id: "s", data: Note(text: "sync")))
            let feed = try #require(database.changes(since: start))
            #expect(feed.commits.map(\.changes) == [[.written(id: "s", className: "Note")]])
            var iterator = database.observe(Note.self, id: "s").makeAsyncIterator()
            #expect(try await iterator.next()??.text == "sync")
            database.write(Record(id: "s", data: Note(text: "changed")))
            #expect(try await iterator.next()??.text == "changed")
            #expect(database.changes(since: ChangeToken(logID: "elsewhere", sequence: 0)) == nil)
            if case .changesUnavailable? = database.lastError {} else { Issue.record("lastError: \(String(describing: database.lastError))") }
        }
    }

    #if canImport(Observation)
    @MainActor @Test func aLiveQueryFollowsTheDatabaseOnTheMainActor() async throws {
        try await withDatabase { database, _ in
            let query = database.liveQuery(Note.self)
            let object = database.liveObject(Note.self, id: "a")
            let changed = Locked(false)
            withObservationTracking { _ = query.value } onChange: { changed.withLock { $0 = true } }
            try await database.write(Record(id: "a", data: Note(text: "live")))
            let deadline = Date().addingTimeInterval(10)
            while (query.value.count != 1 || object.value == nil), Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
            #expect(query.value.map(\.text) == ["live"])
            #expect(object.value?.text == "live")
            #expect(changed.withLock { $0 })
            query.stop()
            try await database.write(Record(id: "b", data: Note(text: "after stop")))
            try await Task.sleep(for: .milliseconds(100))
            #expect(query.value.count == 1)
            #expect(query.error == nil)
        }
    }
    #endif
}

/// A model for the observation of one id whose bytes stay as they were.
struct ObservedAccount: Codable, Persistable {
    var balance: Int
}

@Suite("Observing one id")
struct ObservedIDTests {
    /// Deleting a whole class of another type, or writing the same bytes again, may have changed
    /// the observed id (the deletion names no ids), but its bytes are as they were: nothing is
    /// given again, and the next value is the next change.
    @Test func anUnchangedRecordIsNotGivenAgain() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "acct", data: ObservedAccount(balance: 5)))
            try await database.write(Record(id: "other", data: Note(text: "x")))
            let notifier = database.session.engine.notifier
            let observation = database.observe(ObservedAccount.self, id: "acct")
            let (first, firstValue) = AsyncStream<Int?>.makeStream()
            let (go, goOn) = AsyncStream<Void>.makeStream()
            let task = Task { () async throws -> Int? in
                var iterator = observation.makeAsyncIterator()
                firstValue.yield(try await iterator.next()??.balance)
                for await _ in go { break }
                return try await iterator.next()??.balance
            }
            var firstIterator = first.makeAsyncIterator()
            #expect(await firstIterator.next() == 5)
            _ = try await database.delete(Note.self)
            try await database.write(Record(id: "acct", data: ObservedAccount(balance: 5)))
            goOn.yield()
            // The observation has read again after both commits and waits for another.
            #expect(await waitUntil(seconds: 10) { notifier.waiting > 0 })
            try await database.write(Record(id: "acct", data: ObservedAccount(balance: 6)))
            #expect(try await task.value == 6)
        }
    }
}

import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import LocalLMDBTestSupport
import Testing

/// A note whose encoding can be made to wait, or to call back into a database, at one record:
/// for batches whose caller is slow to hand the writer the next part.
final class HeldNote: Storable, Sendable {
    let text: String
    /// Runs when this note is encoded.
    let onEncode: (@Sendable () -> Void)?

    init(text: String, onEncode: (@Sendable () -> Void)? = nil) {
        self.text = text
        self.onEncode = onEncode
    }

    required init(dataObject: DataObject) {
        text = dataObject.get("text")
        onEncode = nil
    }

    func toDataObject() -> DataObject {
        onEncode?()
        return DataObject(self).add(key: "text", value: text)
    }
}

/// A model stored under whatever class name it is given (through a data object read from JSON).
final class NamedClass: Storable {
    let name: String
    init(_ name: String) { self.name = name }
    required init(dataObject: DataObject) { name = dataObject.className ?? "" }
    func toDataObject() -> DataObject {
        DataObject(rawString: "{\"object\":\"\(name)\"}")
    }
}

/// A batch written through the synchronous face on a thread of its own, whose encoding stops
/// in its second part (the writer has the first) until `release()`.
final class HeldBatch: Sendable {
    let database: SerializationDatabase
    private let released = DispatchSemaphore(value: 0)
    private let reached = Locked(false)
    private let written = Locked<Int?>(nil)
    private let finished = DispatchSemaphore(value: 0)

    init(directory: URL, size: Int) throws {
        database = try SerializationDatabase(directory: directory, configuration: smallParts)
        var held = (0..<size).map { Record(id: "n-\($0)", data: HeldNote(text: "note")) }
        held[LargeBatchTests.part + 2] = Record(id: "held", data: HeldNote(text: "held") { [reached, released] in
            reached.withLock { $0 = true }
            released.wait()
        })
        let records = held
        Thread { [database, written, finished] in
            written.withLock { $0 = database.write(contentsOf: records) }
            finished.signal()
        }.start()
    }

    /// Returns once the encoding has stopped.
    func waitUntilHeld() async throws {
        #expect(await waitUntil(seconds: 120) { reached.withLock { $0 } })
    }

    /// Lets the encoding go on, and waits (at most 30 s) for the write: what it returned.
    func release() -> Int? {
        released.signal()
        guard finished.wait(timeout: .now() + 30) == .success else { return nil }
        return written.withLock { $0 }
    }
}

/// A configuration whose batches go in parts of `LargeBatchTests.part` records, so that the
/// tests' batches need not be large (a batch of the default's size takes a cooperative thread
/// for seconds under ThreadSanitizer, starving other suites' tasks).
let smallParts: DatabaseConfiguration = {
    var configuration = DatabaseConfiguration()
    configuration.batchPartRecords = LargeBatchTests.part
    return configuration
}()

/// Batches of more records than `BatchStream.partRecords` are sent to the writer thread in
/// parts while the rest is encoded (`BatchStream`): still one transaction, in order.
@Suite("Large batches", .serialized)
struct LargeBatchTests {
    static let part = 1000
    static let size = part * 2 + 123

    @Test func aBatchOfSeveralPartsIsOneCommitInOrderAndTheLastWriteWins() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory, configuration: smallParts)
            var records = (0..<(Self.size - 1)).map { Record(id: "n-\($0)", data: Note(text: "note \($0)")) }
            records.append(Record(id: "n-5", data: Note(text: "last")))  // In the last part; n-5 is in the first.
            let token = try database.changeToken()
            #expect(try await database.write(contentsOf: records) == Self.size)

            #expect(try await database.count(Note.self) == Self.size - 1)
            #expect((try await database.read(id: "n-5") as Note?)?.text == "last")
            #expect((try await database.read(id: "n-\(Self.size - 2)") as Note?)?.text == "note \(Self.size - 2)")
            let feed = try database.changes(since: token)
            #expect(feed.commits.count == 1)
            #expect(feed.commits.first?.changes == records.map { Change.written(id: $0.id, className: "Note") })
            let report = try await database.verifyIntegrity()
            #expect(report.isConsistent, "\(report)")
        }
    }

    @Test func aFailureInALaterPartWritesNothingOfTheBatch() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory, configuration: smallParts)
            try await database.write(Record(id: "before", data: Note(text: "kept")))
            var records = (0..<Self.size).map { Record(id: "n-\($0)", data: Note(text: "note")) }
            records[Self.size - 10] = Record(id: "", data: Note(text: "no id"))  // In the last part.
            await #expect(throws: LocalDatabaseError.emptyID) { try await database.write(contentsOf: records) }
            #expect(try await database.count() == 1)
            // The database goes on working.
            #expect(try await database.write(contentsOf: Array(records.prefix(3))) == 3)
            #expect(try await database.count() == 4)
        }
    }

    @Test func inATransactionTheBatchIsPartOfIt() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory, configuration: smallParts)
            let records = (0..<(Self.part + 1)).map { Record(id: "n-\($0)", data: Note(text: "note")) }
            try await database.startTransaction()
            #expect(try await database.write(contentsOf: records) == records.count)
            #expect(try await database.count(Note.self) == records.count)
            try await database.rollbackTransaction()
            #expect(try await database.count() == 0)
        }
    }

    /// At the default part size, through the synchronous face, on a thread of its own (not a
    /// cooperative one, which it would hold for seconds under ThreadSanitizer).
    @Test func theSynchronousFaceWritesBatchesOfTheDefaultPartSize() async throws {
        try await withTemporaryDirectory { directory in
            let database = try SerializationDatabase(directory: directory)
            let size = BatchStream.partRecords * 2 + 123
            let written = Locked<Int?>(nil)
            Thread {
                let records = (0..<size).map { Record(id: "n-\($0)", data: Note(text: "note \($0)")) }
                written.withLock { $0 = database.write(contentsOf: records) }
            }.start()
            #expect(await waitUntil(seconds: 600) { written.withLock { $0 } != nil })
            #expect(written.withLock { $0 } == size)
            #expect(database.count(Note.self) == size)
            #expect((database.read(id: "n-\(size - 1)") as Note?)?.text == "note \(size - 1)")
        }
    }

    /// The caller stalls in the middle of the batch until another write has been made. The
    /// writer must not wait for the caller's next part for ever: it lets go, the other write
    /// goes through, and the batch is written whole once the caller has finished.
    @Test func aCallerThatStallsDoesNotHoldUpOtherWriters() async throws {
        try await withTemporaryDirectory { directory in
            let batch = try HeldBatch(directory: directory, size: Self.size)
            let other = try LocalDatabase(directory: directory, configuration: smallParts)
            try await batch.waitUntilHeld()
            // Without letting go, this write would wait for the batch, which waits for it.
            try await withTimeout(seconds: 30) {
                try await other.write(Record(id: "other", data: Note(text: "meanwhile")))
            }
            #expect(try await other.count(HeldNote.self) == 0)  // The batch is not half written.
            #expect(batch.release() == Self.size)
            #expect(try await other.count(HeldNote.self) == Self.size)
            #expect(try await other.count(Note.self) == 1)
            let report = try await other.verifyIntegrity()
            #expect(report.isConsistent, "\(report)")
        }
    }

    /// The writer lets go of a stalled batch; the database is closed before the caller has
    /// finished encoding. The caller must then get an error, not wait for ever for a writer
    /// thread that has stopped.
    @Test func closingTheDatabaseWhileTheBatchIsStalledEndsTheBatch() async throws {
        try await withTemporaryDirectory { directory in
            let batch = try HeldBatch(directory: directory, size: Self.size)
            try await batch.waitUntilHeld()
            let coordinator = try batch.database.opened.get().engine.coordinator
            #expect(await waitUntil(seconds: 60) { coordinator.streamsLetGo.withLock { $0 } == 1 })  // The writer has let go.
            batch.database.close()
            #expect(batch.release() == 0)  // Failed (closed), and returned.
            let reopened = try LocalDatabase(directory: directory, configuration: smallParts)
            #expect(try await reopened.count() == 0)
        }
    }

    /// The map space reserved for a batch in parts is estimated from its first part. When later
    /// parts are far larger, the map fills while they are applied: the writer grows it and
    /// applies every part again from the first, in a new transaction. Nothing may be lost,
    /// doubled or logged twice.
    @Test func aBatchWhoseLaterPartsOutgrowTheEstimateIsWrittenOnceAndWhole() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory, configuration: smallParts)
            let token = try database.changeToken()
            let big = String(repeating: "x", count: 20_000)
            // A first part of tiny records, then 2,000 of 20 KB: 40 MB, past the 16 MiB map.
            let records = (0..<(Self.part + 2_000)).map { index in
                Record(id: "r-\(index)", data: Note(text: index < Self.part ? "s" : big + "\(index)"))
            }
            #expect(try await database.write(contentsOf: records) == records.count)
            #expect(try await database.count(Note.self) == records.count)
            #expect((try await database.read(id: "r-\(records.count - 1)") as Note?)?.text == big + "\(records.count - 1)")
            #expect((try await database.read(id: "r-0") as Note?)?.text == "s")
            let feed = try database.changes(since: token)
            #expect(feed.commits.count == 1)
            #expect(feed.commits.first?.changes.count == records.count)
            let report = try await database.verifyIntegrity()
            #expect(report.isConsistent, "\(report)")
        }
    }

    /// Records of classes whose names are equal as Swift strings but spelt differently (here
    /// `K` and the Kelvin sign) are different classes: a batch must file each under its own.
    @Test func classNamesInABatchAreComparedByTheirBytes() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory, configuration: smallParts)
            let records = [
                Record(id: "ascii", data: NamedClass("K")), Record(id: "kelvin", data: NamedClass("\u{212A}")),
                Record(id: "ascii-2", data: NamedClass("K")),
            ]
            try await database.write(contentsOf: records)
            let report = try await database.verifyIntegrity()
            #expect(report.isConsistent, "\(report)")
            let feed = try database.changes(since: ChangeToken(logID: try database.changeToken().logID, sequence: 0))
            #expect(feed.commits.last?.changes == [
                .written(id: "ascii", className: "K"), .written(id: "kelvin", className: "\u{212A}"),
                .written(id: "ascii-2", className: "K"),
            ].map { $0 })
            let names = feed.commits.last?.changes.compactMap { change -> [UInt8]? in
                if case let .written(_, className) = change { return Array(className.utf8) }
                return nil
            }
            #expect(names == [Array("K".utf8), Array("\u{212A}".utf8), Array("K".utf8)])
        }
    }

    /// A model that writes to the database while it is encoded, through the synchronous face
    /// on the thread encoding the batch: the writer lets go of the batch, and both go through.
    @Test func aModelThatWritesWhileTheBatchIsEncodedDoesNotDeadlock() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory, configuration: smallParts)
            let inner = try SerializationDatabase(directory: directory, configuration: smallParts)
            var records = (0..<Self.size).map { Record(id: "n-\($0)", data: HeldNote(text: "note")) }
            records[Self.part + 2] = Record(id: "calls", data: HeldNote(text: "calls") {
                _ = inner.write(Record(id: "inner", data: Note(text: "written while encoding")))
            })
            let sendable = records
            let written = try await withTimeout(seconds: 60) { try await database.write(contentsOf: sendable) }
            #expect(written == Self.size)
            #expect((try await database.read(id: "inner") as Note?)?.text == "written while encoding")
            #expect(try await database.count(HeldNote.self) == Self.size)
        }
    }
}

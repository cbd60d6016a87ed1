import Foundation
@testable import LocalLMDB
import LocalLMDBEncryption
import LocalLMDBLMDB
import LocalLMDBTestSupport
import Testing

/// A model with a value of every kind whose stored form could be bent on the way out and in.
private struct LineKinds: Codable, Persistable, Equatable {
    var doubles: [Double]
    var dates: [Date]
    var big: UInt64
    var small: Int64
    var decimal: Decimal
    var text: String
    var byKey: [String: Int]
    var data: Data
    var nested: [[String?]]

    static func sample(_ index: Int) -> LineKinds {
        LineKinds(
            doubles: [-0.0, .nan, Double(nan: 0x123, signaling: false), .infinity, -.infinity, .greatestFiniteMagnitude,
                      .leastNonzeroMagnitude, 0.1, Double(index)],
            dates: [Date(timeIntervalSince1970: -62_135_596_800 - 86_400), Date(timeIntervalSince1970: 253_402_300_800 + 1),
                    Date(timeIntervalSince1970: 0.000_5), Date(timeIntervalSince1970: Double(index) * 1e6)],
            big: UInt64.max - UInt64(index), small: Int64.min + Int64(index), decimal: Decimal(string: "0.1000000000000000512")!,
            text: "line \(index): \"quoted\" \\ back\nslash, tab\t, é, e\u{301}, 🧪, \u{0}",
            byKey: ["clé": index, "e\u{301}": -index, "🔑": 1, "\"": 2],
            data: Data([0, 255, UInt8(index % 256)]), nested: [["a", nil], [], [nil]])
    }
}

private func lines(of url: URL) throws -> [String] {
    String(decoding: try Data(contentsOf: url), as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
}

@Suite("JSON Lines export and import")
struct JSONLinesTests {
    /// Export, import into a new database, export again: the two files are identical byte for
    /// byte (so is every record's stored document), models read back equal, and the imported
    /// database's indexes work.
    @Test func exportAndImportRoundTripEveryValueBitForBit() async throws {
        try await withTemporaryDirectory { directory in
            let source = try LocalDatabase(directory: directory.appendingPathComponent("a"))
            let longID = String(repeating: "長", count: 300)  // 900 bytes: stored under a hash
            try await source.write(contentsOf: (0..<50).map { Record(id: "k\($0)", data: LineKinds.sample($0)) })
            try await source.write(Record(id: longID, data: LineKinds.sample(99)))
            try await source.write(Record(id: "é-\u{0}-\"", data: Note(text: "unicode id")))
            // Two ids that differ only in Unicode normalization: two records.
            try await source.write(contentsOf: [Record(id: "\u{E9}", data: Note(text: "precomposed")), Record(id: "e\u{301}", data: Note(text: "decomposed"))])
            try await source.write(contentsOf: (0..<30).map { Record(id: "t\($0)", data: Ticket(queue: "q\($0 % 3)", priority: $0, title: "t")) })
            let first = directory.appendingPathComponent("first.jsonl")
            let seen = Locked<[LinesProgress]>([])
            #expect(try await source.export(to: first) { progress in seen.withLock { $0.append(progress) } } == 84)
            #expect(seen.withLock { $0.last } == LinesProgress(lines: 84, linesCommitted: 84))

            let target = try LocalDatabase(directory: directory.appendingPathComponent("b"))
            #expect(try await target.importLines(from: first, batchSize: 7) == 84)
            let second = directory.appendingPathComponent("second.jsonl")
            #expect(try await target.export(to: second) == 84)
            #expect(try Data(contentsOf: first) == Data(contentsOf: second))

            for index in [0, 17, 49] {
                let read: LineKinds? = try await target.read(id: "k\(index)")
                let expected = LineKinds.sample(index)
                #expect(read?.doubles.map(\.bitPattern) == expected.doubles.map(\.bitPattern))
                #expect(read?.big == expected.big && read?.small == expected.small && read?.decimal == expected.decimal)
                #expect(read?.text == expected.text && read?.byKey == expected.byKey && read?.data == expected.data)
                #expect(read?.dates == expected.dates && read?.nested == expected.nested)
            }
            #expect((try await target.read(id: longID) as LineKinds?)?.big == UInt64.max - 99)
            #expect((try await target.read(id: "é-\u{0}-\"") as Note?)?.text == "unicode id")
            #expect((try await target.read(id: "\u{E9}") as Note?)?.text == "precomposed")
            #expect((try await target.read(id: "e\u{301}") as Note?)?.text == "decomposed")
            #expect(try await target.read(Query(Ticket.self).filter("queue", .equals("q1"))).count == 10)
            #expect(try await target.verifyIntegrity().isConsistent)
            // Some types only.
            let tickets = directory.appendingPathComponent("tickets.jsonl")
            #expect(try await source.export(to: tickets, types: [Ticket.self]) == 30)
            #expect(try lines(of: tickets).filter { !$0.isEmpty }.allSatisfy { $0.hasPrefix("{\"id\":\"t") })
        }
    }

    /// An encrypted database exports only when asked to decrypt; an import into an encrypted
    /// database seals what it stores.
    @Test func encryptedDatabasesExportOnlyWhenAskedToDecrypt() async throws {
        try await withTemporaryDirectory { directory in
            var configuration = DatabaseConfiguration()
            configuration.encryption = DatabaseEncryption(try AESGCMCipher(current: try EncryptionKey(id: "k", bytes: [UInt8](repeating: 3, count: 32))))
            let database = try LocalDatabase(directory: directory.appendingPathComponent("db"), configuration: configuration)
            try await database.write(Record(id: "n", data: Note(text: "the secret")))
            let file = directory.appendingPathComponent("out.jsonl")
            await expectError({ if case .exportWouldDecrypt = $0 { true } else { false } }) {
                try await database.export(to: file)
            }
            #expect(!FileManager.default.fileExists(atPath: file.path))
            #expect(try await database.export(to: file, decrypting: true) == 1)
            #expect(try lines(of: file).first?.contains("the secret") == true)

            let copy = try LocalDatabase(directory: directory.appendingPathComponent("copy"), configuration: configuration)
            #expect(try await copy.importLines(from: file) == 1)
            #expect((try await copy.read(id: "n") as Note?)?.text == "the secret")
            await copy.close()
            let stored = try Data(contentsOf: directory.appendingPathComponent("copy").appendingPathComponent("data.mdb"))
            #expect(stored.range(of: Data("the secret".utf8)) == nil)
        }
    }

    /// A line that is not a record stops the import, naming it and the last line stored: the
    /// batches before it are stored, nothing of its batch is, and the import resumes after it.
    @Test func aBadLineStopsTheImportAtItsBatchAndNamesIt() async throws {
        try await withTemporaryDirectory { directory in
            let good = { (index: Int) in "{\"id\":\"n\(index)\",\"class\":\"Note\",\"value\":{\"object\":\"Note\",\"text\":\"\(index)\"}}" }
            let bad: [(line: String, reason: String)] = [
                ("{\"id\":\"x\",\"class\":\"Note\",\"value\":{\"text\":\"unterminated}}", "invalid JSON"),
                ("{\"id\":\"x\",\"class\":\"Note\",\"value\":{\"a\":1,\"a\":2}}", "more than once"),
                ("{\"class\":\"Note\",\"value\":{}}", "no \"id\""),
                ("{\"id\":\"\",\"class\":\"Note\",\"value\":{}}", "\"id\""),
                ("{\"id\":\"x\",\"class\":\"Note\",\"value\":[1]}", "not an object"),
                ("{\"id\":\"x\",\"class\":\"Note\",\"value\":{},\"extra\":1}", "unexpected member"),
                ("[1,2]", "invalid JSON"),
            ]
            for (round, case_) in bad.enumerated() {
                let file = directory.appendingPathComponent("in\(round).jsonl")
                let text = (1...4).map(good).joined(separator: "\n") + "\n" + case_.line + "\n" + (6...8).map(good).joined(separator: "\n") + "\n"
                try Data(text.utf8).write(to: file)
                let database = try LocalDatabase(directory: directory.appendingPathComponent("db\(round)"))
                await expectError({ error in
                    guard case let .invalidLine(line, reason, committed) = error else { return false }
                    return line == 5 && committed == 3 && reason.contains(case_.reason)
                }) {
                    try await database.importLines(from: file, batchSize: 3)
                }
                #expect(try await database.readIDs(Note.self).sorted() == ["n1", "n2", "n3"], "round \(round)")
                #expect(try await database.importLines(from: file, batchSize: 3, startingAtLine: 6) == 3)
                #expect(try await database.count(Note.self) == 6)
            }
            // Invalid UTF-8 in an id.
            let file = directory.appendingPathComponent("utf8.jsonl")
            try Data(Array("{\"id\":\"".utf8) + [0xC3, 0x28] + Array("\",\"class\":\"Note\",\"value\":{}}\n".utf8)).write(to: file)
            let database = try LocalDatabase(directory: directory.appendingPathComponent("utf8"))
            await expectError({ if case .invalidLine(1, _, 0) = $0 { true } else { false } }) {
                try await database.importLines(from: file)
            }
            #expect(try await database.count() == 0)
        }
    }

    /// A line longer than the limit is refused without being held whole, and a last line
    /// without its newline is read; a missing file is a typed error.
    @Test func longLinesAndOddFilesAreTypedErrors() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory.appendingPathComponent("db"))
            let file = directory.appendingPathComponent("long.jsonl")
            let long = "{\"id\":\"a\",\"class\":\"Note\",\"value\":{\"text\":\"" + String(repeating: "x", count: 3 << 20) + "\"}}"
            try Data(("{\"id\":\"first\",\"class\":\"Note\",\"value\":{\"text\":\"1\"}}\n" + long + "\n").utf8).write(to: file)
            let engine = database.engine
            let outcome = try await onThreadOfItsOwn("test import") { () throws(DatabaseError) -> Result<Int, DatabaseError> in
                Result { () throws(DatabaseError) in
                    try JSONLines.importLines(engine, from: file, batchSize: 1, firstLine: 1, lineLimit: 1 << 20, progress: nil)
                }
            }
            guard case let .failure(.invalidLine(line, reason, committed)) = outcome else {
                Issue.record("\(outcome)")
                return
            }
            #expect(line == 2 && committed == 1 && reason.contains("longer"))
            let last = directory.appendingPathComponent("last.jsonl")
            try Data("\n{\"id\":\"z\",\"class\":\"Note\",\"value\":{\"text\":\"no newline\"}}".utf8).write(to: last)
            #expect(try await database.importLines(from: last) == 1)
            #expect((try await database.read(id: "z") as Note?)?.text == "no newline")
            await expectError({ if case .invalidDirectory = $0 { true } else { false } }) {
                try await database.importLines(from: directory.appendingPathComponent("missing.jsonl"))
            }
            await expectError({ if case .invalidDirectory = $0 { true } else { false } }) {
                try await database.export(to: last)
            }
        }
    }

    /// The synchronous face exports and imports too.
    @Test func theSynchronousFaceExportsAndImports() async throws {
        try await withTemporaryDirectory { directory in
            let database = try SerializationDatabase(directory: directory.appendingPathComponent("a"))
            #expect(database.write(Record(id: "n", data: Note(text: "sync"))))
            let file = directory.appendingPathComponent("out.jsonl")
            #expect(database.export(to: file) == 1)
            #expect(database.export(to: file) == nil)
            let target = try SerializationDatabase(directory: directory.appendingPathComponent("b"))
            #expect(target.importLines(from: file) == 1)
            #expect((target.read(id: "n") as Note?)?.text == "sync")
        }
    }
}

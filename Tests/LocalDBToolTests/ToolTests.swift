import Foundation
import LocalDBTool
import LocalLMDB
import LocalLMDBEncryption
import LocalLMDBTestSupport
import Testing

/// A model the tool's tests store (the tool itself knows no model types).
struct Pet: Codable, Persistable {
    var name: String
    var weight: Double
    var born: Date
    var big: UInt64
    var tags: [String]
}

/// A model with a declared index, for `query`.
struct Member: Codable, Persistable {
    static let indexes: [Index] = [.on("age"), .on("address.city", "age")]
    struct Address: Codable { var city: String }
    var name: String
    var age: Int
    var address: Address
}

/// SwiftLocal's `Person` as a hand-written model, renamed from `OldPerson`.
class ImportedPerson: Storable {
    var name: String
    var height: Double
    var exactHeight: Decimal?
    var born: Date?
    required init(dataObject: DataObject) {
        name = dataObject.get("name", onFail: "")
        height = dataObject.get("height", onFail: 0.0)
        exactHeight = dataObject.get("height")
        born = dataObject.get("born")
    }
    func toDataObject() -> DataObject { DataObject(self).add(key: "name", value: name).add(key: "height", value: height) }
}

/// `localdb`, run as its own process: its real binary, exit statuses, standard output and errors.
@Suite("localdb, end to end", .serialized)
struct ToolTests {
    /// stats, types, get, ls and verify read a database another process (this one) holds open.
    @Test func readingVerbs() async throws {
        try await withTemporaryDirectory { directory in
            let data = directory.appendingPathComponent("data")
            let database = try LocalDatabase(directory: data)
            let born = Date(timeIntervalSince1970: 1_700_000_000.25)
            try await database.write(contentsOf: (0..<30).map { Record(id: String(format: "pet%02d", $0), data: Pet(name: "P\($0)", weight: 0.1, born: born, big: UInt64.max, tags: ["a"])) })
            try await database.write(Record(id: "ünï \"quoted\"", data: Pet(name: "Odd", weight: -0.0, born: born, big: 1 << 60, tags: [])))

            let stats = try runTool(["stats", data.path, "--json"])
            #expect(stats.status == 0, "\(stats.errors)")
            let decoded = try JSONDecoder().decode(DatabaseStatistics.self, from: stats.output)
            #expect(decoded.records == 31)
            #expect(decoded.types.map(\.className) == ["Pet"] && decoded.types.map(\.records) == [31])
            #expect(decoded.fileBytes > 0 && decoded.mapBytes >= decoded.usedBytes && decoded.pageSize > 0)
            #expect(try runTool(["stats", data.path]).lines.first == "records      31")

            #expect(try runTool(["types", data.path]).lines == ["Pet\t31"])

            let raw = try runTool(["get", data.path, "ünï \"quoted\"", "--raw"])
            #expect(raw.status == 0)
            let stored = try #require(try await database.storedDocument(id: "ünï \"quoted\""))
            #expect(raw.text == stored.json + "\n")
            let pretty = try runTool(["get", data.path, "pet01"])
            #expect(pretty.lines.first == "Pet pet01")
            #expect(pretty.text.contains("\"name\": \"P1\""))
            let missing = try runTool(["get", data.path, "nobody"])
            #expect(missing.status == 4)
            #expect(missing.errors == "localdb: no record 'nobody'\n")

            #expect(try runTool(["ls", data.path, "Pet", "--limit", "3"]).lines == ["pet00", "pet01", "pet02"])
            #expect(try runTool(["ls", data.path, "Pet", "--after", "pet28", "--json"]).text.contains("\"pet29\""))

            let readers = try runTool(["readers", data.path, "--clear-stale", "--json"])
            #expect(readers.status == 0, "\(readers.errors)")
            #expect(readers.text.contains("\"cleared\" : 0"))
            #expect(try runTool(["readers", data.path]).status == 0)

            let verify = try runTool(["verify", data.path, "--json"])
            #expect(verify.status == 0)
            #expect(verify.text.contains("\"consistent\" : true"))
            // The app's database is untouched by the reads (read-only opens).
            #expect(try await database.count() == 31)
        }
    }

    /// `query` finds records by their fields, through the stored indexes or by reading every
    /// record of the class, with the same results as the model's own query.
    @Test func queryVerb() async throws {
        try await withTemporaryDirectory { directory in
            let data = directory.appendingPathComponent("data")
            let database = try LocalDatabase(directory: data)
            let cities = ["Paris", "Lyon", "Nice"]
            try await database.write(contentsOf: (0..<60).map { Record(id: String(format: "m%02d", $0), data: Member(name: "N\($0)", age: 20 + $0 % 30, address: .init(city: cities[$0 % 3]))) })
            let expected = try await database.read(Query(Member.self).filter("age", .atLeast(45)).sorted(by: "age", descending: true).limit(5))
            let run = try runTool(["query", data.path, "Member", "--where", "age>=45", "--order", "age", "--descending", "--limit", "5"])
            #expect(run.status == 0, "\(run.errors)")
            #expect(run.lines.count == 5)
            #expect(run.lines.map { $0.contains("\"age\":") } == Array(repeating: true, count: 5))
            let expectedIDs = try await database.readIDs(Query(Member.self).filter("age", .atLeast(45)).sorted(by: "age", descending: true).limit(5))
            #expect(expected.count == 5)
            #expect(try runTool(["query", data.path, "Member", "--where", "age>=45", "--order", "age", "--descending", "--limit", "5", "--ids"]).lines == expectedIDs)
            let paris = try await database.readIDs(Query(Member.self).filter("address.city", .equals("Paris")).filter("age", .lessThan(30)))
            #expect(try runTool(["query", data.path, "Member", "--where", "address.city=Paris", "--where", "age<30", "--ids"]).lines == paris)
            // A field no index covers: read by a scan, the same records.
            let named = try runTool(["query", data.path, "Member", "--where", "name^=N1", "--ids"])
            #expect(Set(named.lines) == Set((0..<60).filter { "N\($0)".hasPrefix("N1") }.map { String(format: "m%02d", $0) }))
            #expect(try runTool(["query", data.path, "Member", "--where", "nonsense"]).status == 64)
        }
    }

    /// From the tool's review: query values are read as JSON only when they are JSON, and split
    /// at the first operator; `ls --after` goes on after an id that is not stored; `load` stores
    /// each id once, and a missing input file creates no database.
    @Test func reviewFindings() async throws {
        try await withTemporaryDirectory { directory in
            let lines = directory.appendingPathComponent("in.jsonl")
            try Data([
                #"{"id":"a","class":"P","value":{"born":"2024-01-02","code":"007","v":"1.2.3","expr":"x<y","n":7}}"#,
                #"{"id":"c","class":"P","value":{"born":"2023-05-06","code":"7","v":"1","expr":"a<=b","n":-2.5}}"#,
            ].joined(separator: "\n").utf8).write(to: lines)
            let data = directory.appendingPathComponent("data")
            #expect(try runTool(["load", data.path, lines.path]).status == 0)
            for (condition, ids) in [
                ("born=2024-01-02", ["a"]), ("born>2024-01-01", ["a"]), ("code=007", ["a"]), ("code=7", []), ("code=\"7\"", ["c"]),
                ("v=1.2.3", ["a"]), ("expr=x<y", ["a"]), ("expr=a<=b", ["c"]), ("n=-2.5", ["c"]), ("n>=7", ["a"]),
            ] {
                let run = try runTool(["query", data.path, "P", "--where", condition, "--ids"])
                #expect(run.status == 0, "\(condition): \(run.errors)")
                #expect(run.lines == ids, "\(condition)")
            }
            #expect(try runTool(["ls", data.path, "P", "--after", "b"]).lines == ["c"])
            #expect(try runTool(["ls", data.path, "P", "--after", "0"]).lines == ["a", "c"])

            let twice = directory.appendingPathComponent("twice.jsonl")
            try Data([#"{"id":"x","class":"P","value":{"a":1}}"#, #"{"id":"x","class":"Q","value":{"a":2}}"#].joined(separator: "\n").utf8).write(to: twice)
            let repeated = try runTool(["load", directory.appendingPathComponent("other").path, twice.path])
            #expect(repeated.status == 1)
            #expect(repeated.errors.contains("Line 2 is not a record: the id 'x' is on an earlier line too"))

            let nowhere = directory.appendingPathComponent("never")
            #expect(try runTool(["load", nowhere.path, directory.appendingPathComponent("missing.jsonl").path]).status == 1)
            #expect(!FileManager.default.fileExists(atPath: nowhere.path))
        }
    }

    /// An encrypted database: refused without keys, with a line saying how; with `--key-file`,
    /// read, dumped only with `--decrypt`, backed up (still encrypted) and verified; a wrong key
    /// is refused.
    @Test func encryptedDatabases() async throws {
        try await withTemporaryDirectory { directory in
            let data = directory.appendingPathComponent("data")
            let key = try EncryptionKey(id: "k1", bytes: [UInt8](repeating: 1, count: 32))
            var configuration = DatabaseConfiguration()
            configuration.encryption = DatabaseEncryption(try AESGCMCipher(current: key))
            do {
                let database = try LocalDatabase(directory: data, configuration: configuration)
                try await database.write(contentsOf: (0..<20).map { Record(id: "p\($0)", data: Pet(name: "Secret \($0)", weight: 1, born: Date(), big: 1, tags: [])) })
                await database.close()
            }
            let keys = directory.appendingPathComponent("keys")
            try Data(("# the database's keys\nk1=" + String(repeating: "01", count: 32) + "\n").utf8).write(to: keys)
            let wrong = directory.appendingPathComponent("wrong")
            try Data(("k1=" + String(repeating: "02", count: 32) + "\n").utf8).write(to: wrong)

            let refused = try runTool(["stats", data.path])
            #expect(refused.status == 1)
            #expect(refused.errors == "localdb: the database at \(data.path) is encrypted: give its keys with --key-file\n")
            #expect(try runTool(["stats", data.path, "--key-file", wrong.path]).status == 1)
            #expect(try runTool(["stats", data.path, "--key-file", keys.path]).lines.first == "records      20")
            #expect(try runTool(["get", data.path, "p3", "--raw", "--key-file", keys.path]).text.contains("Secret 3"))
            let clear = try runTool(["dump", data.path, "--key-file", keys.path])
            #expect(clear.status == 1)
            #expect(clear.errors.contains("decrypting"))
            #expect(try runTool(["dump", data.path, "--key-file", keys.path, "--decrypt"]).lines.count == 20)
            let copy = directory.appendingPathComponent("copy")
            #expect(try runTool(["backup", data.path, copy.path, "--key-file", keys.path]).status == 0)
            #expect(try runTool(["verify", copy.path]).status == 1)
            #expect(try runTool(["verify", copy.path, "--key-file", keys.path]).status == 0)
            let bad = directory.appendingPathComponent("bad")
            try Data("k1=zz\n".utf8).write(to: bad)
            let badRun = try runTool(["stats", data.path, "--key-file", bad.path])
            #expect(badRun.status == 1 && badRun.errors.contains("line 1 of the key file"))
        }
    }

    /// Errors are one line and a meaningful status; usage errors exit 64; completions exist.
    @Test func errorsAndUsage() async throws {
        try await withTemporaryDirectory { directory in
            let nowhere = try runTool(["stats", directory.appendingPathComponent("none").path])
            #expect(nowhere.status == 1)
            #expect(nowhere.errors.hasPrefix("localdb: no database at"))
            #expect(nowhere.errors.split(separator: "\n").count == 1)
            #expect(try runTool(["stats"]).status == 64 || (try runTool(["stats"]).status == 2))
            #expect(try runTool(["frobnicate"]).status != 0)
            let completion = try runTool(["--generate-completion-script", "bash"])
            #expect(completion.status == 0 && completion.text.contains("localdb"))
        }
    }

    /// dump then load gives the same stored bytes for every record (every value kind, long and
    /// odd ids), through a file and through standard input.
    @Test func dumpAndLoadRoundTripBitForBit() async throws {
        try await withTemporaryDirectory { directory in
            let source = directory.appendingPathComponent("source")
            let database = try LocalDatabase(directory: source)
            var ids: [String] = []
            for index in 0..<200 {
                let id = index == 7 ? String(repeating: "long-id-", count: 80) : "p\(index)-\u{1F600}"
                ids.append(id)
                let born = Date(timeIntervalSince1970: Double(index) * 9_876_543.21 - 62_000_000_000)
                try await database.write(Record(id: id, data: Pet(
                    name: "naïve \"\(index)\"\n\t", weight: index.isMultiple(of: 3) ? .nan : Double(index) / 7, born: born,
                    big: UInt64.max - UInt64(index), tags: ["x", "ÿ"])))
            }
            let dumped = directory.appendingPathComponent("dump.jsonl")
            let viaFile = try runTool(["dump", source.path, "--output", dumped.path])
            #expect(viaFile.status == 0, "\(viaFile.errors)")
            let stdout = try runTool(["dump", source.path])
            #expect(stdout.output == (try Data(contentsOf: dumped)))
            #expect(stdout.lines.count == 200)

            let copy = directory.appendingPathComponent("copy")
            let load = try runTool(["load", copy.path, dumped.path])
            #expect(load.status == 0, "\(load.errors)")
            let piped = directory.appendingPathComponent("piped")
            #expect(try runTool(["load", piped.path], input: dumped).status == 0)
            for target in [copy, piped] {
                let loaded = try LocalDatabase(directory: target)
                for id in ids {
                    let original = try await database.storedDocument(id: id)
                    let again = try await loaded.storedDocument(id: id)
                    #expect(original != nil && original == again)
                }
                #expect(try await loaded.count() == 200)
                await loaded.close()
            }
        }
    }

    /// A bad line stops the load, naming it; batches before it are stored, its own is not.
    @Test func loadRefusesBadLines() async throws {
        try await withTemporaryDirectory { directory in
            let file = directory.appendingPathComponent("bad.jsonl")
            let good = #"{"id":"a","class":"Pet","value":{"object":"Pet","name":"A"}}"#
            try Data([good, good.replacingOccurrences(of: "\"a\"", with: "\"b\""), "{not json", good].joined(separator: "\n").utf8).write(to: file)
            let target = directory.appendingPathComponent("db")
            let run = try runTool(["load", target.path, file.path, "--batch-size", "1"])
            #expect(run.status == 1)
            #expect(run.errors.contains("Line 3 is not a record"))
            #expect(run.errors.contains("Lines up to 2 were stored"))
            let database = try LocalDatabase(directory: target)
            #expect(try await database.count() == 2)
        }
    }

    /// A backup while this process writes: the copy opens and verifies; an existing destination
    /// is refused.
    @Test func backup() async throws {
        try await withTemporaryDirectory { directory in
            let data = directory.appendingPathComponent("data")
            let database = try LocalDatabase(directory: data)
            try await database.write(contentsOf: (0..<500).map { Record(id: "p\($0)", data: Pet(name: "P", weight: 1, born: Date(), big: 1, tags: [])) })
            let copy = directory.appendingPathComponent("copy")
            let writer = Task {
                for index in 0..<200 { try await database.write(Record(id: "w\(index)", data: Pet(name: "W", weight: 1, born: Date(), big: 1, tags: []))) }
            }
            let run = try runTool(["backup", data.path, copy.path, "--compact"])
            try await writer.value
            #expect(run.status == 0, "\(run.errors)")
            let verify = try runTool(["verify", copy.path])
            #expect(verify.status == 0, "\(verify.text)")
            let count = try await LocalDatabase(directory: copy).count()
            #expect(count >= 500 && count <= 700)
            #expect(try runTool(["backup", data.path, copy.path]).status == 1)
        }
    }

    /// `watch` prints the commits of another process as they happen.
    @Test func watchFollowsCommits() async throws {
        try await withTemporaryDirectory { directory in
            let data = directory.appendingPathComponent("data")
            let database = try LocalDatabase(directory: data)
            try await database.write(Record(id: "first", data: Pet(name: "F", weight: 1, born: Date(), big: 1, tags: [])))
            let process = try ChildProcess(toolExecutable.path, ["watch", data.path, "--type", "Pet"], output: .pipe)
            let output = try #require(process.output)
            defer {
                process.send(SIGKILL)
                process.waitUntilExit()
            }
            // Written until the watcher reports one (it may start after the first writes).
            let lines = Task.detached { () -> String in
                var seen = Data()
                while case let chunk = output.readSome(upToCount: 1), !chunk.isEmpty {
                    seen.append(contentsOf: chunk)
                    if chunk.first == UInt8(ascii: "\n") { break }
                }
                return String(decoding: seen, as: UTF8.self)
            }
            let writer = Task {
                var index = 0
                while !Task.isCancelled {
                    try await database.write(Record(id: "w\(index)", data: Pet(name: "W", weight: 1, born: Date(), big: 1, tags: [])))
                    index += 1
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
            let line = await lines.value
            writer.cancel()
            #expect(line.hasPrefix(#"{"change":"written","class":"Pet","id":"w"#))
        }
    }
}

/// SwiftLocal's SQLite files, built here with SwiftLocal's schema and statement, imported.
@Suite("localdb import-sqlite", .serialized)
struct ImportSQLiteTests {
    static let schema = "CREATE TABLE IF NOT EXISTS record (id TEXT PRIMARY KEY, objectName TEXT, data TEXT)"

    /// A SwiftLocal file holding `rows` (id, objectName, data).
    func swiftLocalFile(_ url: URL, _ rows: [(String, String, String)]) throws {
        let file = try SQLiteFile(path: url.path, readOnly: false)
        try file.execute(Self.schema)
        try file.execute("CREATE INDEX IF NOT EXISTS record_objectName ON record (objectName)")
        let insert = try file.prepare("INSERT OR REPLACE INTO record (id, objectName, data) VALUES (?, ?, ?)")
        for (id, name, data) in rows { try insert.run([.text(Array(id.utf8)), .text(Array(name.utf8)), .text(Array(data.utf8))]) }
    }

    @Test func importsEveryRecordLosslessly() async throws {
        try await withTemporaryDirectory { directory in
            let sqlite = directory.appendingPathComponent("swiftlocal.sqlite")
            let big = String(repeating: "é", count: 500_000)
            let rows: [(String, String, String)] = [
                // SwiftLocal wrote Doubles through Decimal, dates in UTC with milliseconds, pretty JSON.
                ("ada", "OldPerson", "{\n  \"object\" : \"OldPerson\",\n  \"name\" : \"Ada\",\n  \"height\" : 0.1000000000000000512,\n  \"born\" : \"1815-12-10T00:00:00.000Z\"\n}"),
                ("bob", "OldPerson", #"{"object":"OldPerson","name":"Bob \u00e9 ☃","height":1.8,"pets":[{"object":"Pet","name":"Rex"}],"nested":{"a":[1,2,[3]]}}"#),
                ("big", "Blob", #"{"object":"Blob","text":""# + big + #""}"#),
                ("student", "Student", #"{"object":"Student","name":"Stu","school":"MIT"}"#),
                ("broken", "OldPerson", #"{"object":"OldPerson","name":"#),
                ("list", "OldPerson", #"[1,2,3]"#),
            ]
            try swiftLocalFile(sqlite, rows)
            let data = directory.appendingPathComponent("data")
            let run = try runTool(["import-sqlite", data.path, sqlite.path, "--json"])
            #expect(run.status == 3, "\(run.errors)")
            #expect(run.text.contains("\"imported\" : 4"))
            #expect(run.text.contains("\"id\" : \"broken\""))
            #expect(run.text.contains("\"id\" : \"list\""))

            let database = try LocalDatabase(directory: data)
            for (id, name, json) in rows.prefix(4) {
                let stored = try #require(try await database.storedDocument(id: id))
                #expect(stored.className == name)
                #expect(stored.json == json.trimmingCharacters(in: .whitespacesAndNewlines))
            }
            // The tool shows the digits as stored.
            let shown = try runTool(["get", data.path, "ada"])
            #expect(shown.text.contains("\"height\": 0.1000000000000000512,"))
            Legacy.addClassRefactor(old: "OldPerson", new: "ImportedPerson")
            let ada = try #require(try await database.read(id: "ada") as ImportedPerson?)
            #expect(ada.height == 0.10000000000000005)
            #expect(ada.exactHeight == Decimal(string: "0.1000000000000000512"))
            #expect(ada.born == ISO8601DateFormatter().date(from: "1815-12-10T00:00:00Z"))
            let people: [ImportedPerson] = try await database.read()
            #expect(people.map(\.name).sorted() == ["Ada", "Bob é ☃"])
        }
    }

    @Test func emptyAndHostileFiles() async throws {
        try await withTemporaryDirectory { directory in
            let data = directory.appendingPathComponent("data")
            let empty = directory.appendingPathComponent("empty.sqlite")
            try swiftLocalFile(empty, [])
            let run = try runTool(["import-sqlite", data.path, empty.path])
            #expect(run.status == 0)
            #expect(run.errors.contains("imported 0 records"))

            let other = directory.appendingPathComponent("other.sqlite")
            try SQLiteFile(path: other.path, readOnly: false).execute("CREATE TABLE things (x)")
            let notSwiftLocal = try runTool(["import-sqlite", data.path, other.path])
            #expect(notSwiftLocal.status == 1)
            #expect(notSwiftLocal.errors.contains("is not a SwiftLocal database"))

            let truncated = directory.appendingPathComponent("truncated.sqlite")
            let full = directory.appendingPathComponent("full.sqlite")
            try swiftLocalFile(full, (0..<2000).map { ("r\($0)", "T", #"{"object":"T","n":"# + "\($0)}") })
            let bytes = try Data(contentsOf: full)
            try bytes.prefix(bytes.count / 3).write(to: truncated)
            let cut = try runTool(["import-sqlite", data.path, truncated.path])
            #expect(cut.status == 1)
            #expect(cut.errors.split(separator: "\n").count == 1)

            let garbage = directory.appendingPathComponent("garbage.sqlite")
            try Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31) }).write(to: garbage)
            #expect(try runTool(["import-sqlite", data.path, garbage.path]).status == 1)
            #expect(try runTool(["import-sqlite", data.path, directory.appendingPathComponent("none.sqlite").path]).status == 1)

            // Invalid UTF-8 in a row's data is reported, not stored.
            let invalid = directory.appendingPathComponent("invalid.sqlite")
            let file = try SQLiteFile(path: invalid.path, readOnly: false)
            try file.execute(Self.schema)
            try file.prepare("INSERT INTO record VALUES (?, ?, ?)").run([.text(Array("bad".utf8)), .text(Array("T".utf8)), .blob([0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D])])
            try file.prepare("INSERT INTO record VALUES (?, ?, ?)").run([.blob([0xC3]), .text(Array("T".utf8)), .text(Array("{}".utf8))])
            try file.prepare("INSERT INTO record VALUES (?, ?, ?)").run([.text(Array("dup".utf8)), .text(Array("T".utf8)), .text(Array(#"{"n":1}"#.utf8))])
            try file.prepare("INSERT INTO record VALUES (?, ?, ?)").run([.blob(Array("dup".utf8)), .text(Array("T".utf8)), .text(Array(#"{"n":2}"#.utf8))])
            let run2 = try runTool(["import-sqlite", data.path, invalid.path])
            #expect(run2.status == 3)
            #expect(run2.errors.contains("record 'bad' not imported"))
            #expect(run2.errors.contains("record 'dup' not imported: the id appears more than once (the first one is stored)"))
            #expect(run2.errors.contains("imported 1 records, 3 not imported"))
            let database = try LocalDatabase(directory: data)
            #expect(try await database.count() == 1)
            #expect(try await database.storedDocument(id: "dup")?.json == #"{"n":1}"#)
        }
    }
}

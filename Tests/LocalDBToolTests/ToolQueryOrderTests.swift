import Foundation
import LocalLMDB
import LocalLMDBTestSupport
import Testing

/// A string field indexed alone, for the tool's queries.
struct ToolNulText: Codable, Persistable {
    static let indexes: [Index] = [.on("v")]
    var v: String
}

@Suite("localdb query: strings with U+0000 and limits")
struct ToolQueryOrderTests {
    /// `localdb query` compares strings by their bytes, U+0000 included (a value given as JSON,
    /// `"a\u0000"`), on the stored index, and `--limit 0` gives nothing.
    @Test func queriesMatchStringsByTheirBytes() async throws {
        try await withTemporaryDirectory { directory in
            let data = directory.appendingPathComponent("data")
            let database = try LocalDatabase(directory: data)
            let values = ["e": "", "z": "\u{0}", "za": "\u{0}a", "a": "a", "az": "a\u{0}", "aza": "a\u{0}a", "b": "b"]
            try await database.write(contentsOf: values.map { Record(id: $0.key, data: ToolNulText(v: $0.value)) })
            await database.close()
            func ids(_ arguments: [String]) throws -> [String] {
                let run = try runTool(["query", data.path, "ToolNulText"] + arguments + ["--ids"])
                #expect(run.status == 0, "\(run.errors)")
                return run.lines
            }
            #expect(try ids(["--where", "v=a"]) == ["a"])
            #expect(try ids(["--where", "v=\"a\\u0000\""]) == ["az"])
            #expect(try ids(["--where", "v=\"\""]) == ["e"])
            #expect(try ids(["--where", "v<=a"]) == ["e", "z", "za", "a"])
            #expect(try ids(["--where", "v>a"]) == ["az", "aza", "b"])
            #expect(try ids(["--where", "v>\"\""]) == ["z", "za", "a", "az", "aza", "b"])
            #expect(try ids(["--where", "v^=a"]) == ["a", "az", "aza"])
            #expect(try ids(["--where", "v=a", "--limit", "0"]) == [])
            #expect(try ids(["--where", "v>a", "--limit", "2"]) == ["az", "aza"])
        }
    }
}

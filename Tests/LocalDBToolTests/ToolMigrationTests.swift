import Foundation
import LocalLMDB
import LocalLMDBTestSupport
import Testing

/// `localdb migrations`: which migrations a database has had, and the one under way.
@Suite("localdb migrations")
struct ToolMigrationTests {
    @Test func migrationsVerb() async throws {
        try await withTemporaryDirectory { directory in
            let data = directory.appendingPathComponent("data")
            let database = try LocalDatabase(directory: data)
            #expect(try runTool(["migrations", data.path]).lines.isEmpty)
            _ = try await database.write(contentsOf: (0..<10).map { Record(id: MigrationWorkload.id($0), data: PersonV1(name: MigrationWorkload.name($0))) })
            var migrator = MigrationWorkload.migrator(batchSize: 3)
            migrator.registerMigration("second \"quoted\" name", steps: [])
            try await database.migrate(with: migrator)
            let run = try runTool(["migrations", data.path])
            #expect(run.status == 0, "\(run.errors)")
            #expect(run.lines == ["split names", "second \"quoted\" name"])
            let json = try runTool(["migrations", data.path, "--json"])
            let decoded = try JSONSerialization.jsonObject(with: json.output) as? [String: Any]
            #expect(decoded?["completed"] as? [String] == ["split names", "second \"quoted\" name"])
            await database.close()

            // The tool knows no migration: it reads the database and writes nothing into it.
            let lines = directory.appendingPathComponent("lines.jsonl")
            try Data(#"{"id":"x","class":"PersonV1","value":{"object":"PersonV1","name":"X Y","visits":0}}"#.utf8).write(to: lines)
            let load = try runTool(["load", data.path, lines.path])
            #expect(load.status != 0)
            #expect(load.errors.contains("split names"), "\(load.errors)")
            #expect(try runTool(["stats", data.path]).lines.first == "records      10")
        }
    }
}

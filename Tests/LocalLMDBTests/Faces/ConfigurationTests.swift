import Foundation
import LocalLMDB
import Testing

@Suite("Database configuration")
struct ConfigurationTests {
    /// The defaults live in the engine's configuration; the public initializer's default
    /// arguments repeat them, and must agree.
    @Test func theInitializersAgreeOnEveryDefault() {
        let defaults = DatabaseConfiguration()
        #expect(DatabaseConfiguration(durability: .full) == defaults)
        #expect(defaults.durability == .full && defaults.busyTimeout == .seconds(30) && defaults.maximumMapSize == 1 << 40)
        #expect(defaults.maxReaders == 256 && !defaults.readOnly && defaults.changeLogCommits == 10_000 && defaults.changeLogBytes == 64 << 20)
    }

    /// Each property reads back what was set, and a database reports the configuration it was
    /// opened with.
    @Test func eachValueIsKeptAndReported() async throws {
        try await withTemporaryDirectory { directory in
            var configuration = DatabaseConfiguration(durability: .metaAsync, busyTimeout: .seconds(7), maximumMapSize: 64 << 20, maxReaders: 100)
            configuration.changeLogCommits = 12
            configuration.changeLogBytes = 4096
            #expect(configuration.durability == .metaAsync && configuration.busyTimeout == .seconds(7))
            #expect(configuration.maximumMapSize == 64 << 20 && configuration.maxReaders == 100)
            let database = try LocalDatabase(directory: directory, configuration: configuration)
            #expect(database.configuration == configuration)
            configuration.durability = .none
            #expect(database.configuration != configuration)
        }
    }
}

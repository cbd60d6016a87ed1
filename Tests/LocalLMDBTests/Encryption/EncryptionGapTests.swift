import Foundation
@testable import LocalLMDB
import LocalLMDBEncryption
import LocalLMDBTestSupport
import Testing

/// A configuration sealing under a key of 32 bytes all `byte`, named `id`.
private func sealing(_ id: String, _ byte: UInt8) throws -> DatabaseConfiguration {
    var configuration = DatabaseConfiguration()
    configuration.encryption = DatabaseEncryption(try AESGCMCipher(current: try EncryptionKey(id: id, bytes: [UInt8](repeating: byte, count: 32))))
    return configuration
}

/// Whether `error` is `undecryptableRecord` naming `id`.
private func isUndecryptable(_ error: LocalDatabaseError, _ id: String) -> Bool {
    if case .undecryptableRecord(id, _) = error { return true }
    return false
}

@Suite("Encryption: values moved between classes")
struct EncryptionGapTests {
    /// Encryption.md: "A value changed on disk, or moved to another record or class, fails to
    /// open. … Its read throws `undecryptableRecord(id:reason:)`, naming the record. Other
    /// records still read, and `verifyIntegrity()` reports the damaged one." Two records of
    /// different classes have their values swapped on disk (each value a valid sealed value,
    /// whose class name in the clear now disagrees with the type index): neither opens, read as
    /// its own class or as the class its new value names, by id or by type.
    @Test func valuesSwappedBetweenRecordsOfDifferentClassesDoNotOpen() async throws {
        try await withTemporaryDirectory { directory in
            let configuration = try sealing("k1", 7)
            let database = try LocalDatabase(directory: directory, configuration: configuration)
            try await database.write(Record(id: "alice", data: Note(text: "alice's")))
            try await database.write(Record(id: "bob", data: Entry(sequence: 1, payload: "bob's")))
            try await database.write(Record(id: "carol", data: Note(text: "carol's")))
            await database.close()
            let alice = try #require(rawGet(directory, "records", Array("alice".utf8)))
            let bob = try #require(rawGet(directory, "records", Array("bob".utf8)))
            rawPut(directory, "records", [(Array("alice".utf8), bob), (Array("bob".utf8), alice)])

            let reopened = try LocalDatabase(directory: directory, configuration: configuration)
            // By id, as the class each record was written as, and as the class its value now names.
            await expectError({ isUndecryptable($0, "alice") }) { let _: Note? = try await reopened.read(id: "alice") }
            await expectError({ isUndecryptable($0, "alice") }) { let _: Entry? = try await reopened.read(id: "alice") }
            await expectError({ isUndecryptable($0, "bob") }) { let _: Entry? = try await reopened.read(id: "bob") }
            await expectError({ isUndecryptable($0, "bob") }) { let _: Note? = try await reopened.read(id: "bob") }
            // By type.
            await expectError({ isUndecryptable($0, "alice") }) { let _: [Note] = try await reopened.read() }
            await expectError({ isUndecryptable($0, "bob") }) { let _: [Entry] = try await reopened.read() }
            // The other record still reads; the check names both damaged ones.
            #expect((try await reopened.read(id: "carol") as Note?)?.text == "carol's")
            let report = try await reopened.verifyIntegrity()
            #expect(!report.isConsistent)
            #expect(report.problems.contains { "\($0)".contains("'alice'") }, "\(report)")
            #expect(report.problems.contains { "\($0)".contains("'bob'") }, "\(report)")
            #expect(!report.problems.contains { "\($0)".contains("'carol'") }, "\(report)")

            // The synchronous face refuses them the same way.
            await reopened.close()
            let synchronous = try SerializationDatabase(directory: directory, configuration: configuration)
            #expect((synchronous.read(id: "alice") as Note?) == nil)
            #expect(synchronous.lastError.map { isUndecryptable($0, "alice") } == true)
            #expect((synchronous.read(id: "bob") as Entry?) == nil)
            #expect(synchronous.lastError.map { isUndecryptable($0, "bob") } == true)
            synchronous.close()
        }
    }
}

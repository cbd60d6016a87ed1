import CLMDB
import Foundation
@testable import LocalLMDB
import LocalLMDBEncryption
@testable import LocalLMDBEngine
import LocalLMDBLMDB
@testable import LocalLMDBStore
import LocalLMDBTestSupport
import Testing

/// A key of 32 bytes all `byte`, under the id `id`.
func testKey(_ id: String, _ byte: UInt8) throws -> EncryptionKey {
    try EncryptionKey(id: id, bytes: [UInt8](repeating: byte, count: 32))
}

/// The `HELPER_KEYS` form of keys made by `testKey(_:_:)`.
private func helperKeys(_ keys: [(String, UInt8)]) -> String {
    keys.map { id, byte in id + "=" + String(repeating: String(format: "%02x", byte), count: 32) }.joined(separator: ",")
}

/// A configuration sealing under `current`, opening `previous` too.
func encryptedConfiguration(_ current: EncryptionKey, _ previous: [EncryptionKey] = [], adopting: Bool = false) throws -> DatabaseConfiguration {
    var configuration = DatabaseConfiguration()
    configuration.encryption = DatabaseEncryption(try AESGCMCipher(current: current, previous: previous), encryptingExistingValues: adopting)
    return configuration
}

/// The offset of `needle` in `haystack`, if it is there.
private func offset(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
    guard !needle.isEmpty, haystack.count >= needle.count else { return nil }
    let first = needle[0]
    var index = 0
    while index <= haystack.count - needle.count {
        if haystack[index] == first, haystack[index..<(index + needle.count)].elementsEqual(needle) { return index }
        index += 1
    }
    return nil
}

private func dataFile(_ directory: URL) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: directory.appendingPathComponent("data.mdb")))
}

@Suite("Encryption at rest")
struct EncryptionTests {
    /// Everything works on an encrypted database, and no document is in the file in the clear.
    @Test func anEncryptedDatabaseWorksAndKeepsNoDocumentInTheClear() async throws {
        try await withTemporaryDirectory { directory in
            let configuration = try encryptedConfiguration(try testKey("k1", 1))
            let database = try LocalDatabase(directory: directory, configuration: configuration)
            let secret = "the-secret-text-\(UUID().uuidString)"
            try await database.write(Record(id: "n", data: Note(text: secret)))
            try await database.write(contentsOf: (0..<300).map { Record(id: "t\($0)", data: Ticket(queue: "q\($0 % 3)", priority: $0, title: secret)) })
            // A transaction, rolled back and committed.
            try await database.startTransaction()
            try await database.write(Record(id: "rolled", data: Note(text: secret)))
            #expect((try await database.read(id: "rolled") as Note?)?.text == secret)
            try await database.rollbackTransaction()
            try await database.startTransaction()
            try await database.write(Record(id: "kept", data: Note(text: secret)))
            try await database.commitTransaction()
            // Reads: by id, all, ids, count, a query through an index, a page.
            #expect((try await database.read(id: "n") as Note?)?.text == secret)
            #expect((try await database.read(id: "rolled") as Note?) == nil)
            #expect((try await database.read() as [Note]).count == 2)
            let queue = try await database.read(Query(Ticket.self).filter("queue", .equals("q1")).sorted(by: "priority"))
            #expect(queue.map(\.priority) == Array(stride(from: 1, to: 300, by: 3)))
            #expect(try await database.count(Query(Ticket.self).filter("queue", .equals("q2"))) == 100)
            // The sync status patch opens and seals again.
            let report = try await database.verifyIntegrity()
            #expect(report.isConsistent, "\(report)")
            // The other face, on the same environment.
            let synchronous = try SerializationDatabase(directory: directory, configuration: configuration)
            #expect((synchronous.read(id: "kept") as Note?)?.text == secret)
            #expect(synchronous.write(Record(id: "sync", data: Note(text: secret))))
            synchronous.close()
            await database.close()
            // Every value is sealed: the secret is nowhere in the file.
            #expect(offset(of: Array(secret.utf8), in: try dataFile(directory)) == nil)
            let raw = try #require(rawGet(directory, "records", "n"))
            #expect(raw.first == 3)
            // Opened again, with the key, in another process too.
            let reopened = try LocalDatabase(directory: directory, configuration: configuration)
            #expect((try await reopened.read(id: "sync") as Note?)?.text == secret)
            #expect(try await reopened.encryptionState() == EncryptionState(keyIDs: ["k1"], mayHoldUnencryptedValues: false))
            await reopened.close()
            let child = try runHelper(["read-note", directory.path, "n"], environment: ["HELPER_KEYS": helperKeys([("k1", 1)])])
            #expect(child.lines == [secret])
        }
    }

    /// Observation and the change feed work: their events carry ids, and reads decrypt.
    @Test func observationSeesEncryptedWrites() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(try testKey("k1", 1)))
            let token = try database.changeToken()
            var values = database.observe(Note.self, id: "o").makeAsyncIterator()
            if case .some(.none) = try await values.next() {} else { Issue.record("expected nil before the write") }
            try await database.write(Record(id: "o", data: Note(text: "seen")))
            #expect(try await values.next()??.text == "seen")
            let feed = try database.changes(since: token)
            #expect(feed.commits.flatMap(\.changes).contains(.written(id: "o", className: TypeRegistry.name(of: Note.self))))
        }
    }

    /// A wrong key, a missing key, no key and a key for an unencrypted database: typed errors
    /// at open, and nothing changed.
    @Test func keysAreCheckedAtOpen() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(try testKey("k1", 1)))
            try await database.write(Record(id: "n", data: Note(text: "kept")))
            await database.close()
            // The right id, another key.
            await expectError({ if case .wrongEncryptionKey("k1") = $0 { true } else { false } }) {
                _ = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(try testKey("k1", 9)))
            }
            // A new current key, without the one the values are under.
            await expectError({ if case .missingEncryptionKey("k1") = $0 { true } else { false } }) {
                _ = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(try testKey("k2", 2)))
            }
            // No key.
            await expectError({ if case .encryptionRequired = $0 { true } else { false } }) {
                _ = try LocalDatabase(directory: directory)
            }
            #expect(try runHelper(["open", directory.path]).lines.first?.hasPrefix("error") == true)
            // Still readable with the right key.
            let reopened = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(try testKey("k1", 1)))
            #expect((try await reopened.read(id: "n") as Note?)?.text == "kept")
            await reopened.close()
        }
        try await withTemporaryDirectory { directory in
            let plain = try LocalDatabase(directory: directory)
            try await plain.write(Record(id: "n", data: Note(text: "plain")))
            await plain.close()
            await expectError({ if case .unencryptedDatabase = $0 { true } else { false } }) {
                _ = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(try testKey("k1", 1)))
            }
            // Refused without a trace: it opens as before.
            let again = try LocalDatabase(directory: directory)
            #expect((try await again.read(id: "n") as Note?)?.text == "plain")
            await again.close()
        }
    }

    /// Two databases on one directory in one process must agree on encryption, and the second
    /// one's key is checked too.
    @Test func aSecondDatabaseOnTheDirectoryIsChecked() async throws {
        try await withTemporaryDirectory { directory in
            let first = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(try testKey("k1", 1)))
            try await first.write(Record(id: "n", data: Note(text: "x")))
            await expectError({ if case .incompatibleOptions = $0 { true } else { false } }) {
                _ = try LocalDatabase(directory: directory)
            }
            await expectError({ if case .wrongEncryptionKey("k1") = $0 { true } else { false } }) {
                _ = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(try testKey("k1", 7)))
            }
            let second = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(try testKey("k1", 1)))
            #expect((try await second.read(id: "n") as Note?)?.text == "x")
        }
    }

    /// A byte of a stored value flipped in the file: that record is a typed error naming it,
    /// the others read, and the integrity check reports it.
    @Test func aValueChangedOnDiskIsATypedErrorNamingTheRecord() async throws {
        try await withTemporaryDirectory { directory in
            let configuration = try encryptedConfiguration(try testKey("k1", 1))
            let database = try LocalDatabase(directory: directory, configuration: configuration)
            try await database.write(Record(id: "victim", data: Note(text: String(repeating: "v", count: 400))))
            try await database.write(Record(id: "other", data: Note(text: "fine")))
            await database.close()
            let value = try #require(rawGet(directory, "records", "victim"))
            var file = try dataFile(directory)
            // Every copy (an older page may hold one too), in the ciphertext.
            var flipped = 0
            while let at = offset(of: value, in: file) {
                file[at + value.count - 40] ^= 0x01
                flipped += 1
            }
            #expect(flipped > 0)
            try Data(file).write(to: directory.appendingPathComponent("data.mdb"))

            let reopened = try LocalDatabase(directory: directory, configuration: configuration)
            await expectError({ if case .undecryptableRecord("victim", _) = $0 { true } else { false } }) {
                let _: Note? = try await reopened.read(id: "victim")
            }
            await expectError({ if case .undecryptableRecord("victim", _) = $0 { true } else { false } }) {
                let _: [Note] = try await reopened.read()
            }
            #expect((try await reopened.read(id: "other") as Note?)?.text == "fine")
            let report = try await reopened.verifyIntegrity()
            #expect(!report.isConsistent)
            #expect("\(report)".contains("victim"))
        }
    }

    /// Two records' values swapped on disk (each a valid sealed value, of the same class):
    /// neither opens as the other.
    @Test func valuesSwappedBetweenRecordsDoNotOpen() async throws {
        try await withTemporaryDirectory { directory in
            let configuration = try encryptedConfiguration(try testKey("k1", 1))
            let database = try LocalDatabase(directory: directory, configuration: configuration)
            try await database.write(Record(id: "alice", data: Note(text: "alice's")))
            try await database.write(Record(id: "bob", data: Note(text: "bob's")))
            await database.close()
            let alice = try #require(rawGet(directory, "records", "alice"))
            let bob = try #require(rawGet(directory, "records", "bob"))
            rawPut(directory, "records", [(Array("alice".utf8), bob), (Array("bob".utf8), alice)])

            let reopened = try LocalDatabase(directory: directory, configuration: configuration)
            for id in ["alice", "bob"] {
                await expectError({ if case .undecryptableRecord(id, _) = $0 { true } else { false } }) {
                    let _: Note? = try await reopened.read(id: id)
                }
            }
            // An unencrypted value put in its place is refused too.
            await reopened.close()
            let plainDirectory = directory.appendingPathComponent("plain")
            let plain = try LocalDatabase(directory: plainDirectory)
            try await plain.write(Record(id: "alice", data: Note(text: "forged")))
            await plain.close()
            rawPut(directory, "records", [(Array("alice".utf8), try #require(rawGet(plainDirectory, "records", "alice")))])
            let again = try LocalDatabase(directory: directory, configuration: configuration)
            await expectError({ if case .undecryptableRecord("alice", _) = $0 { true } else { false } }) {
                let _: Note? = try await again.read(id: "alice")
            }
        }
    }

    /// Rotation: values sealed under the old key are read while new ones are sealed under the
    /// new one; `reencrypt` seals every one again, with progress, and the old key is retired.
    @Test func rotatingTheKeyReencryptsEveryRecordOnline() async throws {
        try await withTemporaryDirectory { directory in
            let old = try testKey("old", 1)
            let new = try testKey("new", 2)
            let first = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(old))
            try await first.write(contentsOf: (0..<250).map { Record(id: "t\($0)", data: Ticket(queue: "q", priority: $0, title: "t")) })
            await first.close()

            let database = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(new, [old]))
            #expect(try await database.encryptionState()?.keyIDs == ["old", "new"])
            try await database.write(Record(id: "fresh", data: Note(text: "under new")))
            let seen = Locked<[ReencryptionProgress]>([])
            let resealed = try await database.reencrypt(batchSize: 100) { progress in seen.withLock { $0.append(progress) } }
            #expect(resealed == 250)
            #expect(seen.withLock { $0.map(\.recordsVisited) } == [100, 200, 251])
            #expect(try await database.encryptionState() == EncryptionState(keyIDs: ["new"], mayHoldUnencryptedValues: false))
            #expect(try await database.read(Query(Ticket.self).filter("queue", .equals("q"))).count == 250)
            // Again: nothing left to seal.
            #expect(try await database.reencrypt() == 0)
            await database.close()
            let fresh = try #require(rawGet(directory, "records", "fresh"))
            #expect(fresh.first == 3 && offset(of: [3] + Array("new".utf8), in: fresh) != nil)
            // The old key is no longer needed, nor accepted as the current one.
            let rotated = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(new))
            #expect(try await rotated.count(Ticket.self) == 250)
            #expect(try await rotated.verifyIntegrity().isConsistent)
            await rotated.close()
        }
    }

    /// A key rotation as a step of a migration: every record sealed under the new key, the old
    /// one retired, once; an unencrypted database fails the step with a typed error.
    @Test func aMigrationStepRotatesTheKey() async throws {
        try await withTemporaryDirectory { directory in
            let old = try testKey("old", 1)
            let new = try testKey("new", 2)
            let first = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(old))
            try await first.write(contentsOf: (0..<150).map { Record(id: "t\($0)", data: Ticket(queue: "q", priority: $0, title: "t")) })
            await first.close()

            var migrator = DatabaseMigrator()
            migrator.registerMigration("rotate to new", steps: [.reencrypt(batchSize: 40)])
            let database = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(new, [old]))
            #expect(try await database.migrate(with: migrator) == ["rotate to new"])
            #expect(try await database.encryptionState() == EncryptionState(keyIDs: ["new"], mayHoldUnencryptedValues: false))
            #expect(try await database.migrate(with: migrator).isEmpty)
            await database.close()
            let rotated = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(new))
            #expect(try await rotated.count(Ticket.self) == 150)
            #expect(try await rotated.verifyIntegrity().isConsistent)
            await rotated.close()
        }
        try await withTemporaryDirectory { directory in
            let plain = try LocalDatabase(directory: directory)
            var migrator = DatabaseMigrator()
            migrator.registerMigration("rotate", steps: [.reencrypt()])
            await #expect(throws: LocalDatabaseError.self) { try await plain.migrate(with: migrator) }
            #expect(try await plain.migrationStatus() == MigrationStatus(completed: [], underWay: "rotate"))
            await plain.close()
        }
    }

    /// An unencrypted database, opened to be encrypted, reads its old values and writes new
    /// ones sealed; `reencrypt` seals the rest.
    @Test func anUnencryptedDatabaseIsEncryptedInPlace() async throws {
        try await withTemporaryDirectory { directory in
            let plain = try LocalDatabase(directory: directory)
            try await plain.write(contentsOf: (0..<50).map { Record(id: "n\($0)", data: Note(text: "plain \($0)")) })
            await plain.close()
            let database = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(try testKey("k", 5), adopting: true))
            #expect(try await database.encryptionState() == EncryptionState(keyIDs: ["k"], mayHoldUnencryptedValues: true))
            #expect((try await database.read(id: "n7") as Note?)?.text == "plain 7")
            #expect(try await database.reencrypt(batchSize: 16) == 50)
            #expect(try await database.encryptionState() == EncryptionState(keyIDs: ["k"], mayHoldUnencryptedValues: false))
            #expect((try await database.read() as [Note]).count == 50)
            await database.close()
            #expect(rawGet(directory, "records", "n7")?.first == 3)
            await expectError({ if case .encryptionRequired = $0 { true } else { false } }) {
                _ = try LocalDatabase(directory: directory)
            }
        }
    }

    /// Re-encryption killed part-way (SIGKILL, after some batches) leaves every record readable with both keys;
    /// the old key is still required; run again, it finishes.
    @Test func reencryptionKilledPartWayResumes() async throws {
        try await withTemporaryDirectory { directory in
            let old = try testKey("old", 1)
            let new = try testKey("new", 2)
            let first = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(old))
            try await first.write(contentsOf: (0..<2000).map { Record(id: "n\($0)", data: Note(text: "note \($0)")) })
            await first.close()

            // Killed after a random number of batches, before it could finish.
            let target = Int.random(in: 1...30)
            let (process, output) = try launchHelper(
                ["reencrypt", directory.path], environment: ["HELPER_KEYS": helperKeys([("new", 2), ("old", 1)]), "HELPER_STOP_AFTER": "\(target)"])
            let collector = LineCollector(output)
            #expect(await collector.wait(seconds: 60) { $0.filter { $0.hasPrefix("progress ") }.count >= target })
            process.send(SIGKILL)
            process.waitUntilExit()
            #expect(collector.waitForEnd())

            await expectError({ if case .missingEncryptionKey("old") = $0 { true } else { false } }) {
                _ = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(new))
            }
            let database = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(new, [old]))
            let notes: [Note] = try await database.read()
            #expect(notes.count == 2000)
            #expect(Set(notes.map(\.text)) == Set((0..<2000).map { "note \($0)" }))
            #expect(try await database.encryptionState()?.keyIDs == ["old", "new"])
            let resealed = try await database.reencrypt(batchSize: 500)
            #expect(resealed < 2000)  // Those the child sealed are not sealed again.
            #expect(try await database.encryptionState()?.keyIDs == ["new"])
            #expect(try await database.verifyIntegrity().isConsistent)
            await database.close()
            let rotated = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(new))
            #expect(try await rotated.count(Note.self) == 2000)
        }
    }

    /// A process still sealing under a key that another's re-encryption retired has its writes
    /// refused, rather than writing values the database's keys cannot open.
    @Test func writesUnderARetiredKeyAreRefused() async throws {
        try await withTemporaryDirectory { directory in
            let old = try testKey("old", 1)
            let new = try testKey("new", 2)
            let stale = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(old))
            try await stale.write(Record(id: "a", data: Note(text: "a")))
            // Another process rotates to the new key.
            let child = try runHelper(["reencrypt", directory.path], environment: ["HELPER_KEYS": helperKeys([("new", 2), ("old", 1)])])
            #expect(child.lines.last == "done 1")
            // The error names the record refused (the first of a batch).
            await expectError({ if case .encryptionFailed("b", _) = $0 { true } else { false } }) {
                try await stale.write(Record(id: "b", data: Note(text: "b")))
            }
            await expectError({ if case .encryptionFailed("c", _) = $0 { true } else { false } }) {
                try await stale.write(contentsOf: [Record(id: "c", data: Note(text: "c")), Record(id: "d", data: Note(text: "d"))])
            }
            await stale.close()
            let database = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(new))
            #expect((try await database.read(id: "a") as Note?)?.text == "a")
            #expect((try await database.read(id: "b") as Note?) == nil)
        }
    }

    /// Re-encryption seals only what opens: an unencrypted value planted in an encrypted
    /// database, or a sealed value changed on disk, is an error naming it, and stays unreadable
    /// rather than being made authentic under the new key. The other records are sealed.
    @Test func reencryptionNeverSealsWhatDoesNotOpen() async throws {
        try await withTemporaryDirectory { directory in
            let old = try testKey("old", 1)
            let new = try testKey("new", 2)
            let database = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(old))
            try await database.write(contentsOf: (0..<20).map { Record(id: "n\($0)", data: Note(text: "note \($0)")) })
            await database.close()
            let plainDirectory = directory.appendingPathComponent("plain")
            let plain = try LocalDatabase(directory: plainDirectory)
            try await plain.write(Record(id: "n3", data: Note(text: "forged")))
            await plain.close()
            var changed = try #require(rawGet(directory, "records", "n7"))
            changed[changed.count - 20] ^= 0x01
            rawPut(directory, "records", [(Array("n3".utf8), try #require(rawGet(plainDirectory, "records", "n3"))), (Array("n7".utf8), changed)])

            let rotating = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(new, [old]))
            await expectError({ if case .undecryptableRecord("n3", _) = $0 { true } else { false } }) {
                try await rotating.reencrypt(batchSize: 5)
            }
            for id in ["n3", "n7"] {
                await expectError({ if case .undecryptableRecord(id, _) = $0 { true } else { false } }) {
                    let _: Note? = try await rotating.read(id: id)
                }
            }
            // The batches before the forged record were sealed; the old key is still needed.
            #expect(try await rotating.encryptionState()?.keyIDs == ["old", "new"])
            #expect((try await rotating.read(id: "n12") as Note?)?.text == "note 12")
        }
    }

    /// While a database is being encrypted in place, an unencrypted value whose checksum does
    /// not match is reported, not sealed.
    @Test func encryptingInPlaceDoesNotSealADamagedValue() async throws {
        try await withTemporaryDirectory { directory in
            let plain = try LocalDatabase(directory: directory)
            try await plain.write(contentsOf: (0..<5).map { Record(id: "n\($0)", data: Note(text: "plain \($0)")) })
            await plain.close()
            var damaged = try #require(rawGet(directory, "records", "n2"))
            let digit = try #require(damaged.lastIndex(of: UInt8(ascii: "2")))
            damaged[digit] = UInt8(ascii: "9")  // Still valid JSON: only the checksum tells.
            rawPut(directory, "records", [(Array("n2".utf8), damaged)])
            let database = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(try testKey("k", 5), adopting: true))
            await expectError({ if case .corruptRecord("n2", _) = $0 { true } else { false } }) {
                let _: Note? = try await database.read(id: "n2")
            }
            await expectError({ if case .corruptRecord("n2", _) = $0 { true } else { false } }) {
                try await database.reencrypt()
            }
            await expectError({ if case .corruptRecord("n2", _) = $0 { true } else { false } }) {
                let _: Note? = try await database.read(id: "n2")
            }
            #expect(try await database.encryptionState()?.mayHoldUnencryptedValues == true)
        }
    }

    /// Records whose ids are too long to be their own keys keep the id in the value: a value
    /// moved from one to another (both sealed, of the same class) is refused, by id and in a
    /// read of all, and rotation seals them like any other.
    @Test func longIDsAreBoundToTheirKeys() async throws {
        try await withTemporaryDirectory { directory in
            let configuration = try encryptedConfiguration(try testKey("k1", 1))
            let ids = ["a", "b"].map { String(repeating: $0, count: 600) }
            let database = try LocalDatabase(directory: directory, configuration: configuration)
            for id in ids { try await database.write(Record(id: id, data: Note(text: "of \(id.prefix(1))"))) }
            #expect((try await database.read(id: ids[0]) as Note?)?.text == "of a")
            #expect(Set((try await database.read() as [Note]).map(\.text)) == ["of a", "of b"])
            #expect(try await database.readIDs(Note.self).sorted() == ids)
            await database.close()
            let rotated = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(try testKey("k2", 2), [try testKey("k1", 1)]))
            #expect(try await rotated.reencrypt() == 2)
            #expect((try await rotated.read(id: ids[1]) as Note?)?.text == "of b")
            await rotated.close()

            let keys = ids.map { StorageKey($0, maxKeySize: 511).bytes }
            let values = try keys.map { try #require(rawGet(directory, "records", bytes: $0)) }
            rawPut(directory, "records", [(keys[0], values[1]), (keys[1], values[0])])
            let swapped = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(try testKey("k2", 2)))
            for id in ids {
                await expectError({ if case .undecryptableRecord = $0 { true } else { false } }) {
                    let _: Note? = try await swapped.read(id: id)
                }
            }
            await expectError({ if case .undecryptableRecord = $0 { true } else { false } }) {
                let _: [Note] = try await swapped.read()
            }
        }
    }
}

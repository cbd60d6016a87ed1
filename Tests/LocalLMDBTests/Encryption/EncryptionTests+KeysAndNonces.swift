import CLMDB
import Foundation
@testable import LocalLMDB
import LocalLMDBEncryption
@testable import LocalLMDBEngine
import LocalLMDBLMDB
@testable import LocalLMDBStore
import LocalLMDBTestSupport
import Testing

// Re-encryption beside writers and cancellation, nonces (forks included), minimal ciphers and bad keys.
extension EncryptionTests {
    /// A writer that keeps adding records after the position re-encryption has reached does not
    /// keep it going: it ends after one pass over the records there were when it began, and
    /// every record is sealed under the new key.
    @Test func reencryptionEndsWhileAWriterKeepsAddingRecords() async throws {
        try await withTemporaryDirectory { directory in
            let old = try testKey("old", 1)
            let new = try testKey("new", 2)
            let first = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(old))
            try await first.write(contentsOf: (0..<200).map { Record(id: "a\($0)", data: Note(text: "old \($0)")) })
            await first.close()

            let database = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(new, [old]))
            let done = Locked(false)
            // A bound that only a re-encryption waiting for the writer to stop reaches (about
            // 20 rounds are seen while it runs).
            let writerRounds = 2000
            let writer = Task {
                var round = 0
                // Ids after every old one: each lands ahead of the re-encryption's position.
                while !done.withLock({ $0 }), round < writerRounds {
                    try await database.write(contentsOf: (0..<100).map { Record(id: "z\(100_000 + round)-\($0 + 100)", data: Note(text: "new")) })
                    round += 1
                }
                return round
            }
            let resealed = try await database.reencrypt(batchSize: 2)
            done.withLock { $0 = true }
            let rounds = try await writer.value
            #expect(resealed == 200)
            #expect(rounds < writerRounds, "re-encryption ended only once the writer stopped")
            await database.close()
            let rotated = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(new))
            #expect(try await rotated.count(Note.self) == 200 + 100 * rounds)
            #expect((try await rotated.read() as [Note]).count == 200 + 100 * rounds)
        }
    }

    /// A cancelled re-encryption stops between batches, leaves every record readable with the
    /// keys it had, and a later call finishes it.
    @Test func aCancelledReencryptionCanBeResumed() async throws {
        try await withTemporaryDirectory { directory in
            let old = try testKey("old", 1)
            let new = try testKey("new", 2)
            let first = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(old))
            try await first.write(contentsOf: (0..<100).map { Record(id: "n\($0)", data: Note(text: "note \($0)")) })
            await first.close()
            let database = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(new, [old]))
            let cancelled = Task {
                try await database.reencrypt(batchSize: 10) { _ in withUnsafeCurrentTask { $0?.cancel() } }
            }
            await #expect(throws: CancellationError.self) { try await cancelled.value }
            #expect(try await database.encryptionState()?.keyIDs == ["old", "new"])
            #expect((try await database.read() as [Note]).count == 100)
            #expect(try await database.reencrypt() == 90)
            #expect(try await database.encryptionState()?.keyIDs == ["new"])
        }
    }

    /// Nonces drawn a block at a time are each used once, across blocks.
    @Test func noncesAreNeverReused() throws {
        let cipher = try AESGCMCipher(current: try testKey("k", 1))
        var nonces = Set<[UInt8]>()
        let text = [UInt8]("the same text".utf8)
        // Many blocks of 21 nonces.
        for _ in 0..<2_000 {
            let sealed = try text.withUnsafeBytes { text in
                try [UInt8]().withUnsafeBytes { try cipher.seal(text, keyID: "k", associatedData: $0) }
            }
            #expect(sealed.count == text.count + 28)
            nonces.insert(Array(sealed.prefix(12)))
        }
        #expect(nonces.count == 2_000)
    }

    /// A child process made by `fork` does not hand out its parent's next nonces again.
    /// (Not under ThreadSanitizer, whose runtime does not support `fork` in a process with
    /// threads: its children can hang.)
    @Test(.enabled(if: !runningUnderThreadSanitizer)) func aChildOfForkDrawsNoncesOfItsOwn() throws {
        let (status, lines) = try runHelper(["fork-nonces"])
        #expect(status == 0)
        let child = lines.first { $0.hasPrefix("child ") }?.dropFirst(6)
        let parent = lines.first { $0.hasPrefix("parent ") }?.dropFirst(7)
        #expect(child?.count == 24 && parent?.count == 24, "\(lines)")
        #expect(child != parent)
    }

    /// A child made by `fork` while another thread of its parent seals can seal too: it never
    /// inherits the nonce source's lock held by a thread it does not have (which would hang it).
    /// (Not under ThreadSanitizer, as above.)
    @Test(.enabled(if: !runningUnderThreadSanitizer)) func aChildOfForkCanSealWhileItsParentSeals() throws {
        let (status, lines) = try runHelper(["fork-while-sealing"])
        #expect(status == 0)
        #expect(lines == ["failed 0"])
    }

    /// A cipher that implements only `seal` and `open` (LocalLMDB's faster entry points take
    /// their default implementations) works, and writes the same format as one that implements
    /// them all.
    @Test func aCipherWithOnlySealAndOpenWorks() async throws {
        struct SealAndOpenOnly: RecordCipher {
            let inner: AESGCMCipher
            var currentKeyID: String { inner.currentKeyID }
            func hasKey(id keyID: String) -> Bool { inner.hasKey(id: keyID) }
            func seal(_ plaintext: UnsafeRawBufferPointer, keyID: String, associatedData: UnsafeRawBufferPointer) throws -> [UInt8] {
                try inner.seal(plaintext, keyID: keyID, associatedData: associatedData)
            }
            func open(_ sealed: UnsafeRawBufferPointer, keyID: String, associatedData: UnsafeRawBufferPointer) throws -> [UInt8] {
                try inner.open(sealed, keyID: keyID, associatedData: associatedData)
            }
        }
        try await withTemporaryDirectory { directory in
            var minimal = DatabaseConfiguration()
            minimal.encryption = DatabaseEncryption(SealAndOpenOnly(inner: try AESGCMCipher(current: try testKey("k", 1))))
            do {
                let database = try LocalDatabase(directory: directory, configuration: minimal)
                try await database.write(contentsOf: (0..<50).map { Record(id: "m\($0)", data: Note(text: "minimal \($0)")) })
                #expect((try await database.read(id: "m7") as Note?)?.text == "minimal 7")
            }
            do {
                let database = try LocalDatabase(directory: directory, configuration: try encryptedConfiguration(try testKey("k", 1)))
                #expect((try await database.read(id: "m7") as Note?)?.text == "minimal 7")
                try await database.write(Record(id: "full", data: Note(text: "full")))
                #expect(try await database.verifyIntegrity().problems.isEmpty)
            }
            let database = try LocalDatabase(directory: directory, configuration: minimal)
            #expect((try await database.read(id: "full") as Note?)?.text == "full")
            #expect((try await database.read() as [Note]).count == 51)
        }
    }

    /// Keys and ciphers refuse bad input with typed errors.
    @Test func badKeysAreTypedErrors() throws {
        #expect(throws: EncryptionKeyError.wrongKeySize(16)) { try EncryptionKey(id: "k", bytes: [UInt8](repeating: 0, count: 16)) }
        #expect(throws: EncryptionKeyError.invalidID("")) { try EncryptionKey(id: "", bytes: [UInt8](repeating: 0, count: 32)) }
        #expect(throws: EncryptionKeyError.duplicateID("k")) { try AESGCMCipher(current: try testKey("k", 1), previous: [try testKey("k", 2)]) }
        let random = try EncryptionKey.random(id: "r")
        #expect(random.withUnsafeBytes { $0.count } == 32)
    }
}

import Foundation
@testable import LocalLMDB
import LocalLMDBEncryption
@testable import LocalLMDBStore
import LocalLMDBLMDB
import LocalLMDBTestSupport
import Testing

/// A model of the app's own with an indexed member named `syncStatus` that is not `Syncable`'s.
private struct OwnStatus: Codable, Persistable {
    static let indexes: [Index] = [.on("syncStatus")]
    var syncStatus: String
}

/// The local side of synchronization, without a server: what the store refuses and keeps.
@Suite struct SyncStoreTests {
    @Test("A database that synchronized refuses to synchronize once it is encrypted, and to become a replica")
    func refusals() async throws {
        try await withTemporaryDirectory { directory in
            var database = try LocalDatabase(directory: directory)
            #expect(try await database.enableSync(device: "d") == 0)
            try await database.write(Record(id: "a", data: Note(text: "x")))
            let state = try #require(ReplicaState(source: "s", position: "p"))
            await #expect(throws: DatabaseError.self) { try await database.applyReplicated([], expected: nil, state: state) }
            await database.close()

            var configuration = DatabaseConfiguration()
            configuration.encryption = DatabaseEncryption(
                try AESGCMCipher(current: try EncryptionKey(id: "k", bytes: [UInt8](repeating: 7, count: 32))), encryptingExistingValues: true)
            database = try LocalDatabase(directory: directory, configuration: configuration)
            do throws(DatabaseError) {
                _ = try await database.enableSync(device: "d")
                Issue.record("an encrypted database went on synchronizing")
            } catch {
                guard case .unsupported = error else { throw error }
            }
            do throws(DatabaseError) {
                _ = try await database.syncPending(limit: 10)
                Issue.record("an encrypted database listed its writes to send")
            } catch {
                guard case .unsupported = error else { throw error }
            }
            await database.close()
        }
    }

    @Test("The synchronizer's status is kept only in Syncable statuses: a model's own indexed `syncStatus` is left alone")
    func ownStatusMemberLeftAlone() async throws {
        try await withDatabase { database, _ in
            _ = try await database.enableSync(device: "d")
            try await database.write(Record(id: "o", data: OwnStatus(syncStatus: "mine")))
            let own: OwnStatus? = try await database.read(id: "o")
            #expect(own?.syncStatus == "mine")
        }
    }

    @Test("Stamps of two devices whose names are spelt differently are two stamps, compared by bytes")
    func stampsCompareByBytes() {
        let composed = SyncStamp(time: 1, device: "\u{E9}")
        let decomposed = SyncStamp(time: 1, device: "e\u{301}")
        #expect(composed != decomposed)
        #expect((composed < decomposed) != (decomposed < composed))
        #expect(Set([composed, decomposed]).count == 2)
    }
}

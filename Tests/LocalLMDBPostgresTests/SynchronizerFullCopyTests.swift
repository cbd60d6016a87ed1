import Foundation
import LocalLMDB
@testable import LocalLMDBPostgres
@testable import LocalLMDBPostgresEngine
import LocalLMDBTestSupport
import Testing

extension PostgresTests.SynchronizerTests {
    @Test("A new device's first pass copies a store of several pages, applying each while the next is fetched: every version, tombstones included, its own earlier write kept, the position recorded")
    func fullCopyOfSeveralPages() async throws {
        let store = PostgresServer.uniqueStore()
        try await closing(try await PostgresStore(configuration: PostgresServer.configuration(), name: store, connections: 2)) { server in
            // 25,000 versions: three pages of the full copy (10,000 each), the last one short.
            for start in stride(from: 0, to: 25_000, by: 5_000) {
                try await server.write(contentsOf: (start..<(start + 5_000)).map { Record(id: "s\($0)", data: Note(text: "server \($0)")) })
            }
            try await server.enableSync()
            for id in ["s0", "s12345", "s24999"] { _ = try await server.delete(id: id) }
            try await withDevice("new", store: store) { local, _, sync in
                // Written on the device before it ever synchronized: later than the server's version.
                try await local.write(Record(id: "s20000", data: Note(text: "device")))
                try await local.write(Record(id: "device-only", data: Note(text: "device")))
                #expect(try await sync.synchronize() == 2)
                #expect(sync.progress.fullCopies == 1)
                #expect(sync.progress.received == 25_000)
                #expect(sync.progress.fullCopy == nil)
                #expect(try await local.syncPending(limit: 0).position != nil)
                #expect(try await local.count() == 25_000 - 3 + 1)
                #expect(try await noteText(local, "s19999") == "server 19999")
                #expect(try await noteText(local, "s20000") == "device")
                #expect(try await noteText(local, "s12345") == nil)
                #expect(try await local.syncStamps(of: "s12345")?.deleted == true)
                #expect(try await storedBytes(local: local) == storedBytes(store: server))
                // The position was recorded: the next pass reads the log, no second copy.
                try await sync.synchronize()
                #expect(sync.progress.fullCopies == 1)
            }
        }
    }
}

import CLMDB
import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import LocalLMDBTestSupport
import Testing

@Suite("Durability levels")
struct DurabilityTests {
    @Test(arguments: [Durability.full, .metaAsync, .none])
    func eachLevelOpensWritesAndReopens(durability: Durability) async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("db")
            do {
                let database = try LocalDatabase(directory: url, durability: durability)
                let flags = database.session.engine.environment.flags
                #expect((flags & UInt32(MDB_NOSYNC) != 0) == (durability == .none))
                #expect((flags & UInt32(MDB_NOMETASYNC) != 0) == (durability == .metaAsync))
                #expect(flags & UInt32(MDB_WRITEMAP) == 0)
                try await database.write(Record(id: "a", data: Note(text: "one")))
                try await database.startTransaction()
                try await database.write(Record(id: "b", data: Note(text: "two")))
                try await database.commitTransaction()
                try await database.startTransaction()
                try await database.write(Record(id: "c", data: Note(text: "three")))
                try await database.rollbackTransaction()
                await database.close()  // returns once the engine has closed: reopen with other options
            }
            let reopened = try LocalDatabase(directory: url, durability: durability)
            #expect(Set(try await reopened.readIDs(Note.self)) == ["a", "b"])
        }
    }

    @Test func theDefaultIsFull() async throws {
        try await withDatabase { database, _ in
            #expect(database.configuration.durability == .full)
        }
    }
}

import Foundation
@testable import LocalLMDB
import LocalLMDBLMDB
import Testing

// Which reads decode models, counted by the models' own `init(from:)`. Each model type below is
// used by one test alone: tests run in parallel, and a decode of the type by another test would
// move its counter.

/// An indexed `Codable` model whose `init(from:)` counts its calls. Used only by
/// `QueryDecodingTests.queriesDecodeOnlyTheRecordsTheyReturn`.
struct DecodeCountedPart: Codable, Persistable, Equatable {
    static let indexes: [Index] = [.on("bin"), .on("rank", counted: true)]
    /// The calls of `init(from:)` so far, in this process.
    static let decodes = Locked(0)
    static var decodeCount: Int { decodes.withLock { $0 } }

    var bin: String
    var rank: Int
    var marker: String

    init(bin: String, rank: Int, marker: String) {
        (self.bin, self.rank, self.marker) = (bin, rank, marker)
    }

    enum CodingKeys: String, CodingKey {
        case bin, rank, marker
    }

    init(from decoder: any Decoder) throws {
        Self.decodes.withLock { $0 += 1 }
        let container = try decoder.container(keyedBy: CodingKeys.self)
        bin = try container.decode(String.self, forKey: .bin)
        rank = try container.decode(Int.self, forKey: .rank)
        marker = try container.decode(String.self, forKey: .marker)
    }
}

/// A `Syncable` `Codable` model whose `init(from:)` counts its calls. Used only by
/// `QueryDecodingTests.readingByStatusDecodesOnlyThatStatus`. Its status is stored by
/// `Syncable` (not among its coding keys), as the protocol's documentation describes.
struct DecodeCountedReading: Codable, Syncable, Identifiable {
    /// The calls of `init(from:)` so far, in this process.
    static let decodes = Locked(0)
    static var decodeCount: Int { decodes.withLock { $0 } }

    var id: String
    var value: Int
    var syncStatus: SyncStatus = .notSynced

    init(id: String, value: Int, syncStatus: SyncStatus = .notSynced) {
        (self.id, self.value, self.syncStatus) = (id, value, syncStatus)
    }

    enum CodingKeys: String, CodingKey {
        case id, value
    }

    init(from decoder: any Decoder) throws {
        Self.decodes.withLock { $0 += 1 }
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        value = try container.decode(Int.self, forKey: .value)
    }
}

@Suite("Queries decode only what they return")
struct QueryDecodingTests {
    static func partID(_ number: Int) -> String { String(format: "p%04d", number) }

    /// `count`, `exists` and `readIDs` of a query on an index decode no record, inside a
    /// transaction too; `read` decodes exactly the records it returns (its offset and limit
    /// applied), not every record of the type.
    @Test func queriesDecodeOnlyTheRecordsTheyReturn() async throws {
        try await withDatabase { database, _ in
            let total = 600
            let parts = (0..<total).map { Record(id: Self.partID($0), data: DecodeCountedPart(bin: "b\($0 % 20)", rank: $0, marker: "part \($0)")) }
            #expect(try await database.write(contentsOf: parts) == total)
            let start = DecodeCountedPart.decodeCount

            // From the indexes alone.
            let bin7 = Query(DecodeCountedPart.self).filter("bin", .equals("b7"))
            let bin7IDs = (0..<total).filter { $0 % 20 == 7 }.map(Self.partID)
            let ranks = Query(DecodeCountedPart.self).filter("rank", .between(100, 349))
            #expect(try await database.count(bin7) == 30)
            #expect(try await database.exists(bin7))
            #expect(try await database.exists(Query(DecodeCountedPart.self).filter("bin", .equals("nowhere"))) == false)
            #expect(try await database.readIDs(bin7) == bin7IDs)
            #expect(try await database.count(ranks) == 250)
            #expect(try await database.readIDs(ranks) == (100...349).map(Self.partID))
            #expect(try await database.count(ranks.offset(10).limit(5)) == 5)
            let topRanks = Query(DecodeCountedPart.self).filter("rank", .atLeast(590)).sorted(by: "rank", descending: true)
            #expect(try await database.readIDs(topRanks) == (590..<600).reversed().map(Self.partID))
            #expect(DecodeCountedPart.decodeCount == start, "count, exists or readIDs decoded records")

            // read: the matches, and only them.
            let found = try await database.read(bin7)
            #expect(found.map(\.rank) == (0..<total).filter { $0 % 20 == 7 })
            #expect(found.allSatisfy { $0.bin == "b7" && $0.marker == "part \($0.rank)" })
            #expect(DecodeCountedPart.decodeCount == start + 30, "read decoded records it did not return")

            // An offset and a limit are applied before decoding.
            let page = try await database.read(Query(DecodeCountedPart.self).filter("rank", .atLeast(500)).sorted(by: "rank").offset(10).limit(7))
            #expect(page.map(\.rank) == Array(510...516))
            #expect(DecodeCountedPart.decodeCount == start + 37, "the skipped or limited-out records were decoded")
            #expect(try await database.first(bin7)?.rank == 7)
            #expect(DecodeCountedPart.decodeCount == start + 38)
            #expect(try await database.read(Query(DecodeCountedPart.self).filter("rank", .lessThan(0))).isEmpty)
            #expect(DecodeCountedPart.decodeCount == start + 38)

            // Inside a transaction, with writes of its own not yet committed: the same.
            try await database.startTransaction()
            _ = try await database.write(contentsOf: (0..<3).map { Record(id: "t\($0)", data: DecodeCountedPart(bin: "b7", rank: 1_000 + $0, marker: "new \($0)")) })
            let inTransaction = DecodeCountedPart.decodeCount
            #expect(try await database.count(bin7) == 33)
            #expect(try await database.exists(bin7))
            #expect(try await database.readIDs(bin7) == bin7IDs + ["t0", "t1", "t2"])
            #expect(DecodeCountedPart.decodeCount == inTransaction, "count, exists or readIDs decoded records in a transaction")
            #expect(try await database.read(bin7).count == 33)
            #expect(DecodeCountedPart.decodeCount == inTransaction + 33)
            try await database.rollbackTransaction()

            // The control: reading every record of the type decodes each once.
            let beforeAll = DecodeCountedPart.decodeCount
            let all: [DecodeCountedPart] = try await database.read()
            #expect(all.count == total)
            #expect(DecodeCountedPart.decodeCount == beforeAll + total)
        }
    }

    /// `read(withStatus:)` decodes only the records with that status, and
    /// `readIDs(withStatus:)`, `syncStatus(of:id:)`, `setSyncStatus` and a count of a status
    /// decode none.
    @Test func readingByStatusDecodesOnlyThatStatus() async throws {
        try await withDatabase { database, _ in
            let total = 200
            let ids = (0..<total).map { String(format: "r%03d", $0) }
            #expect(try await database.write(contentsOf: ids.enumerated().map { DecodeCountedReading(id: $0.element, value: $0.offset) }) == total)
            let start = DecodeCountedReading.decodeCount

            let chosen = ["r017", "r123", "r199"]
            #expect(try await database.setSyncStatus(.syncing, forIDs: chosen, of: DecodeCountedReading.self) == 3)
            #expect(try await database.syncStatus(of: DecodeCountedReading.self, id: "r123") == .syncing)
            #expect(try await database.syncStatus(of: DecodeCountedReading.self, id: "r124") == .notSynced)
            let className = TypeRegistry.name(of: DecodeCountedReading.self)
            #expect(try await database.readIDs(withStatus: .syncing) == [className: chosen])
            let notSynced = try await database.readIDs(withStatus: .notSynced)
            #expect(notSynced[className] == ids.filter { !chosen.contains($0) })
            #expect(try await database.count(Query(DecodeCountedReading.self).filter("syncStatus", .equals(SyncStatus.syncing.rawValue))) == 3)
            #expect(DecodeCountedReading.decodeCount == start, "setting, reading or counting statuses decoded records")

            let syncing: [DecodeCountedReading] = try await database.read(withStatus: .syncing)
            #expect(syncing.map(\.id) == chosen)
            #expect(syncing.map(\.value) == [17, 123, 199])
            #expect(syncing.allSatisfy { $0.syncStatus == .syncing })
            #expect(DecodeCountedReading.decodeCount == start + 3, "read(withStatus:) decoded records of other statuses")

            let synced: [DecodeCountedReading] = try await database.read(withStatus: .synced)
            #expect(synced.isEmpty)
            #expect(DecodeCountedReading.decodeCount == start + 3)
        }
    }
}

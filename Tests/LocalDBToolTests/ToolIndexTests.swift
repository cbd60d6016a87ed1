import Foundation
import LocalLMDB
import Testing

/// A model whose indexes the library stores in the database; `localdb load`, which knows no
/// model type, then writes records of its class. Used by `ToolIndexTests` alone.
struct IndexedGadget: Codable, Persistable, Equatable {
    static let indexes: [Index] = [.on("maker", "weight"), .on("serial", unique: true), .on("weight", counted: true)]
    var maker: String
    var weight: Int
    var serial: String
}

/// A JSON Lines record (as `localdb dump` writes them) holding an `IndexedGadget` stored under
/// `className`, in the form the library stores it.
private func gadgetLine(id: String, className: String, maker: String, weight: Int, serial: String) -> String {
    #"{"id":"\#(id)","class":"\#(className)","value":{"object":"\#(className)","maker":"\#(maker)","weight":\#(weight),"serial":"\#(serial)"}}"#
}

private func gadgetID(_ number: Int) -> String {
    String(format: "g%03d", number)
}

/// `localdb load` writing records of a class whose indexes the library stored: the tool keeps
/// those indexes exact, so the library's queries find its records.
@Suite("localdb load and stored indexes", .serialized)
struct ToolIndexTests {
    static let makers = ["acme", "bolt", "cog"]

    /// Writes one `IndexedGadget` through the library (which stores its indexes), checks the
    /// index finds it, and closes. Returns the class name its records are stored under.
    static func seed(_ data: URL) async throws -> String {
        let database = try LocalDatabase(directory: data)
        try await database.write(Record(id: "seed", data: IndexedGadget(maker: "acme", weight: 5, serial: "s-seed")))
        let stored = try #require(try await database.storedDocument(id: "seed"))
        #expect(try await database.readIDs(Query(IndexedGadget.self).filter("maker", .equals("acme"))) == ["seed"])
        await database.close()
        return stored.className
    }

    /// Records loaded by the tool (three transactions, one replacing the library's record with
    /// other indexed values) are found by the library's queries on each stored index (equality,
    /// compound, unique, counted range, order), the replaced values are gone from them, and the
    /// integrity check, the library's and the tool's, is consistent.
    @Test func loadedRecordsAreFoundThroughTheStoredIndexes() async throws {
        try await withTemporaryDirectory { directory in
            let data = directory.appendingPathComponent("data")
            let className = try await Self.seed(data)

            var lines = (0..<150).map {
                gadgetLine(id: gadgetID($0), className: className, maker: Self.makers[$0 % 3], weight: $0, serial: "s\($0)")
            }
            lines.append(gadgetLine(id: "seed", className: className, maker: "zeta", weight: 999, serial: "s-seed-2"))
            let file = directory.appendingPathComponent("gadgets.jsonl")
            try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: file)
            let load = try runTool(["load", data.path, file.path, "--batch-size", "50"])
            #expect(load.status == 0, "\(load.errors)")
            #expect(load.errors.contains("loaded 151 records"), "\(load.errors)")

            // The tool's own query, through the stored index.
            let acmeIDs = (0..<150).filter { $0 % 3 == 0 }.map(gadgetID)
            let toolQuery = try runTool(["query", data.path, className, "--where", "maker=acme", "--order", "weight", "--ids"])
            #expect(toolQuery.status == 0, "\(toolQuery.errors)")
            #expect(toolQuery.lines == acmeIDs)

            // The library's queries.
            let database = try LocalDatabase(directory: data)
            #expect(try await database.count(IndexedGadget.self) == 151)
            #expect(try await database.readIDs(Query(IndexedGadget.self).filter("maker", .equals("acme")).sorted(by: "weight")) == acmeIDs)
            #expect(try await database.count(Query(IndexedGadget.self).filter("maker", .equals("bolt")).filter("weight", .lessThan(60))) == 20)
            #expect(try await database.readIDs(Query(IndexedGadget.self).filter("serial", .equals("s42"))) == ["g042"])
            #expect(try await database.readIDs(Query(IndexedGadget.self).filter("serial", .equals("s-seed"))).isEmpty)
            #expect(try await database.count(Query(IndexedGadget.self).filter("weight", .between(100, 149))) == 50)
            #expect(try await database.count(Query(IndexedGadget.self).filter("weight", .equals(5))) == 1)  // g005; the seed's 5 is gone
            let replaced = try await database.read(Query(IndexedGadget.self).filter("maker", .equals("zeta")))
            #expect(replaced == [IndexedGadget(maker: "zeta", weight: 999, serial: "s-seed-2")])
            let heaviest = try await database.read(Query(IndexedGadget.self).sorted(by: "weight", descending: true).limit(2))
            #expect(heaviest.map(\.serial) == ["s-seed-2", "s149"])
            let loaded: IndexedGadget? = try await database.read(id: "g077")
            #expect(loaded == IndexedGadget(maker: "cog", weight: 77, serial: "s77"))
            let report = try await database.verifyIntegrity()
            #expect(report.isConsistent, "\(report)")
            await database.close()

            let verify = try runTool(["verify", data.path])
            #expect(verify.status == 0, "\(verify.text) \(verify.errors)")
        }
    }

    /// A load that would give two records one value of a unique index the library stored fails,
    /// naming the unique index, and stores nothing of its transaction.
    @Test func aLoadBreakingAStoredUniqueIndexStoresNothingOfItsBatch() async throws {
        try await withTemporaryDirectory { directory in
            let data = directory.appendingPathComponent("data")
            let className = try await Self.seed(data)
            let lines = [
                gadgetLine(id: "u1", className: className, maker: "bolt", weight: 1, serial: "s-unique"),
                gadgetLine(id: "u2", className: className, maker: "bolt", weight: 2, serial: "s-seed"),  // the seed's serial
                gadgetLine(id: "u3", className: className, maker: "bolt", weight: 3, serial: "s-other"),
            ]
            let file = directory.appendingPathComponent("clash.jsonl")
            try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: file)
            let load = try runTool(["load", data.path, file.path])
            #expect(load.status == 1, "\(load.errors)")
            #expect(load.errors.contains("unique index"), "\(load.errors)")

            let database = try LocalDatabase(directory: data)
            #expect(try await database.count(IndexedGadget.self) == 1)
            #expect(try await database.readIDs(Query(IndexedGadget.self).filter("serial", .equals("s-seed"))) == ["seed"])
            #expect(try await database.count(Query(IndexedGadget.self).filter("maker", .equals("bolt"))) == 0)
            #expect(try await database.verifyIntegrity().isConsistent)
            await database.close()
        }
    }
}

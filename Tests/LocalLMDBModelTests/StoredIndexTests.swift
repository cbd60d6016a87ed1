import Foundation
import LocalLMDBModels
import LocalLMDBModelTestSupport
import Testing

@StoredValue
struct ShopAddress: Equatable, Sendable {
    var city: String
    @NotStored var cached: Int = 0
}

/// Compound and nested indexes by key path, next to `@Indexed` ones.
@StoredModel
struct Shop: Equatable, Sendable {
    #StoredIndex<Shop>(\.address.city, \.rating)
    #StoredIndex<Shop>(\.labels, \.rating)
    #StoredIndex<Shop>(\.opened)
    @Indexed(unique: true) var name: String
    var rating: Int
    var labels: [String]
    var address: ShopAddress
    var opened: Date
}

/// An index on a nested property that is not stored: refused when the type is first used.
@StoredModel
struct BadShop: Sendable {
    #StoredIndex<BadShop>(\.address.cached)
    var address: ShopAddress
}

@Suite struct StoredIndexTests {
    @Test func keyPathIndexesAreTodaysIndexes() {
        #expect(Shop.indexes.map(\.description) == [
            Index.on("name", unique: true), Index.on("address.city", "rating"), Index.each("labels", "rating"), Index.on(.date("opened")),
        ].map(\.description))
        #expect(Index.on(\Shop.address.city, \Shop.rating, counted: true).description == Index.on("address.city", "rating", counted: true).description)
    }

    @Test func compoundAndNestedIndexesServeQueries() async throws {
        try await withDirectory { directory in
            let database = try LocalDatabase(directory: directory.appendingPathComponent("db"))
            let cities = ["Lyon", "Paris", "Nice"]
            let shops = (0..<300).map { number in
                Shop(
                    name: "s\(number)", rating: number % 5, labels: number % 2 == 0 ? ["bio", "l\(number % 3)"] : [],
                    address: ShopAddress(city: cities[number % 3]), opened: Date(timeIntervalSince1970: Double(number) * 3600))
            }
            try await database.write(contentsOf: shops.map { Record(id: $0.name, data: $0) })

            let inLyon = Query(Shop.self, where: #Predicate { $0.address.city == "Lyon" && $0.rating >= 3 }, sortBy: [SortDescriptor(\.rating)])
            let plan = try inLyon.explain()
            #expect(plan.index == Index.on("address.city", "rating").description && !plan.evaluatesPredicate && !plan.sortsInMemory)
            let expected = shops.filter { $0.address.city == "Lyon" && $0.rating >= 3 }.sorted { ($0.rating, $0.name) < ($1.rating, $1.name) }
            #expect(try await database.read(inLyon).map(\.name) == expected.map(\.name))

            let bio = Query(Shop.self, where: #Predicate { $0.labels.contains("bio") && $0.rating == 2 })
            #expect(try bio.explain().index == Index.each("labels", "rating").description)
            #expect(Set(try await database.readIDs(bio)) == Set(shops.filter { $0.labels.contains("bio") && $0.rating == 2 }.map(\.name)))

            let cutoff = Date(timeIntervalSince1970: 100 * 3600)
            let recent = Query(Shop.self, where: #Predicate { $0.opened >= cutoff }, sortBy: [SortDescriptor(\.opened, order: .reverse)]).limit(3)
            #expect(try recent.explain().index == Index.on(.date("opened")).description)
            #expect(try await database.readIDs(recent) == ["s299", "s298", "s297"])

            // The key path filters and orders of the builder take the same indexes.
            #expect(try Query(Shop.self).filter(\.address.city, .equals("Nice")).sorted(by: \.rating).explain().index == Index.on("address.city", "rating").description)
        }
    }

    @Test func anIndexOnAPropertyNotStoredIsRefused() async throws {
        try await withDirectory { directory in
            let database = try LocalDatabase(directory: directory.appendingPathComponent("db"))
            await #expect(throws: LocalDatabaseError.self) {
                try await database.write(Record(id: "b", data: BadShop(address: ShopAddress(city: "Lyon"))))
            }
            #expect(try await database.count() == 0)
        }
    }
}

/// A value that nests itself, through generated code all the way down.
@StoredValue
final class Link: Sendable {
    let label: String
    let next: Link?

    init(label: String, next: Link?) {
        self.label = label
        self.next = next
    }

    /// A chain `depth` links long.
    static func chain(_ depth: Int) -> Link? {
        var link: Link?
        for level in 0..<depth { link = Link(label: "l\(level)", next: link) }
        return link
    }

    var depth: Int { 1 + (next?.depth ?? 0) }
}

@StoredModel
struct Chained: Sendable {
    var chain: Link?
}

@Suite struct DeepNestingTests {
    /// Nesting deeper than the store's 512 levels, through generated code, is a typed error at
    /// write time that stores nothing; a chain within the limit reads back whole.
    @Test func nestingPastTheLimitIsRefusedAtWrite() async throws {
        try await withDirectory { directory in
            let database = try LocalDatabase(directory: directory.appendingPathComponent("db"))
            try await database.write(Record(id: "ok", data: Chained(chain: Link.chain(400))))
            let read: Chained? = try await database.read(id: "ok")
            #expect(read?.chain?.depth == 400)
            for depth in [511, 512, 600, 5000] {
                do {
                    try await database.write(Record(id: "deep\(depth)", data: Chained(chain: Link.chain(depth))))
                    // Up to the limit it is stored (the record object is one level).
                    #expect(depth < 512, "a chain \(depth) deep was stored")
                } catch let error as LocalDatabaseError {
                    guard case .unencodableValue = error else { throw error }
                    #expect(depth >= 511, "a chain \(depth) deep was refused")
                }
            }
            #expect(try await database.count(Chained.self) <= 2)
            #expect(try await database.read(id: "deep600") as Chained? == nil)
        }
    }
}

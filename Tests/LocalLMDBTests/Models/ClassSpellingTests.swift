import CLMDB
import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBStore
import LocalLMDBTestSupport
import Testing

// Two types whose short names are one word in two Unicode normalizations: "Caf\u{E9}" (precomposed)
// and "Cafe\u{301}" (decomposed). Swift keeps identifiers' bytes, so their class names differ in
// bytes and are equal as `String`s. (An editor that normalizes this file would make them one name:
// the tests check the bytes first.)
enum SpellingPrecomposed { struct Café: Codable, Persistable { var a: Int } }
enum SpellingDecomposed { struct Café: Codable, Persistable { var b: Int } }

/// Generic types, each instantiation a class name of its own
/// (`SpellingOne<SpellingNought<SpellingZero>>`…), for writes of many classes.
protocol SpellingMarker: Codable, Persistable { init() }
struct SpellingZero: SpellingMarker { var n = 0 }
struct SpellingNought<Tail: SpellingMarker>: SpellingMarker { var n = 0 }
struct SpellingOne<Tail: SpellingMarker>: SpellingMarker { var n = 1 }

/// The type for `index` (< 2^bits): its bits, spelt in nested generics.
func spellingType(_ index: Int, bits: Int) -> any SpellingMarker.Type {
    func nought<T: SpellingMarker>(_ type: T.Type) -> any SpellingMarker.Type { SpellingNought<T>.self }
    func one<T: SpellingMarker>(_ type: T.Type) -> any SpellingMarker.Type { SpellingOne<T>.self }
    var type: any SpellingMarker.Type = SpellingZero.self
    for bit in 0..<bits { type = index >> bit & 1 == 0 ? nought(type) : one(type) }
    return type
}

/// Writes a model of `type` under `id`, opening the existential.
func writeModel(of type: any SpellingMarker.Type, id: String, to database: LocalDatabase) async throws {
    func write<T: SpellingMarker>(_ type: T.Type) async throws { try await database.write(Record(id: id, data: T())) }
    try await write(type)
}

/// A type whose registration under a name with a zero byte is refused.
struct SpellingZeroByte: Codable, Persistable { var z: Int }

/// Empties a named database of `directory` with raw LMDB (as a process of an earlier version
/// leaves it: the `spellings` database did not exist then).
private func rawEmpty(_ directory: URL, _ database: String) {
    var env: OpaquePointer?
    #expect(mdb_env_create(&env) == 0)
    defer { mdb_env_close(env) }
    mdb_env_set_maxdbs(env, 16)
    #expect(mdb_env_open(env, directory.path, 0, 0o600) == 0)
    var txn: OpaquePointer?
    var dbi: MDB_dbi = 0
    #expect(mdb_txn_begin(env, nil, 0, &txn) == 0)
    #expect(mdb_dbi_open(txn, database, 0, &dbi) == 0)
    #expect(mdb_drop(txn, dbi, 0) == 0)
    #expect(mdb_txn_commit(txn) == 0)
}

@Suite("Class names' spellings")
struct ClassSpellingTests {
    /// The spelling rule finds the stored name by its canonical form, and the database of those
    /// forms is made again from the class table when a process of an earlier version left
    /// classes without their entries: the rule holds all the same.
    @Test func theSpellingRuleHoldsAfterAnEarlierVersionRecordedClasses() async throws {
        let precomposed = String(describing: SpellingPrecomposed.Café.self)
        let decomposed = String(describing: SpellingDecomposed.Café.self)
        try #require(precomposed == decomposed && Array(precomposed.utf8) != Array(decomposed.utf8))
        try await withTemporaryDirectory { directory in
            var database = try LocalDatabase(directory: directory)
            try await database.write(Record(id: "a", data: SpellingPrecomposed.Café(a: 1)))
            try await database.write(Record(id: "n", data: NulText(v: "x", w: 1)))
            await database.close()
            #expect(rawEntryCount(directory, "spellings") == rawEntryCount(directory, "classes"))
            rawEmpty(directory, "spellings")
            database = try LocalDatabase(directory: directory)
            await expectError({ if case let .classRegistration(_, reason) = $0 { reason.contains("another Unicode normalization") } else { false } }) {
                try await database.write(Record(id: "b", data: SpellingDecomposed.Café(b: 2)))
            }
            // A new class is recorded, and the forms are whole again.
            try await database.write(Record(id: "c", data: NulTextScanned(v: "y", w: 2)))
            await database.close()
            #expect(rawEntryCount(directory, "spellings") == 3)
            #expect(rawEntryCount(directory, "classes") == 3)
            database = try LocalDatabase(directory: directory)
            #expect((try await database.read(id: "a") as SpellingPrecomposed.Café?)?.a == 1)
            #expect(try await database.count() == 3)
            await database.close()
        }
    }

    /// A class name with a zero byte cannot be registered: the class table separates a row's
    /// fields with zero bytes, so the row would read as another name (found by the `rows` fuzz
    /// target). The type keeps its own name.
    @Test func aClassNameWithAZeroByteIsRefused() async throws {
        await expectError({ if case let .classRegistration(_, reason) = $0 { reason.contains("U+0000") } else { false } }) {
            try StoredClasses.register(SpellingZeroByte.self, as: "a\u{0}b")
        }
        try await withDatabase { database, _ in
            try await database.write(Record(id: "z", data: SpellingZeroByte(z: 1)))
            #expect(try await database.statistics().types.map(\.className) == ["SpellingZeroByte"])
            #expect((try await database.read(id: "z") as SpellingZeroByte?)?.z == 1)
        }
    }

    /// Many classes in one transaction: each recorded once, each with its form, all readable.
    @Test func manyClassesInOneTransaction() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory)
            let count = 600
            try await database.startTransaction()
            for index in 0..<count { try await writeModel(of: spellingType(index, bits: 10), id: "m\(index)", to: database) }
            try await database.commitTransaction()
            #expect(try await database.count() == count)
            let names = Set(try await database.statistics().types.map(\.className))
            #expect(names.count == count)
            await database.close()
            #expect(rawEntryCount(directory, "spellings") == count)
            #expect(rawEntryCount(directory, "classes") == count)
        }
    }
}

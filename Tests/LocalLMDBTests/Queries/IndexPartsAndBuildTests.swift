import CLMDB
import Foundation
@testable import LocalLMDB
import LocalLMDBEncryption
@testable import LocalLMDBEngine
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import Testing

// Secondary indexes through batches written in parts (`DatabaseConfiguration.batchPartRecords`),
// while an index is built, and damaged on disk.

/// A model with an equality index, a unique one, a multi-entry one and a counted range one.
struct PartItem: Codable, Persistable, Equatable, Sendable {
    static let indexes: [Index] = [.on("group"), .on("code", unique: true), .each("tags"), .on("rank", counted: true)]
    var id: String
    var group: String
    /// nil for some: a missing value is not held to uniqueness.
    var code: String?
    var tags: [String]
    var rank: Int
}

/// A model whose one index the build test drops and builds again.
struct BuildItem: Codable, Persistable, Equatable, Sendable {
    static let indexes: [Index] = [.on("bucket")]
    var bucket: Int
    var n: Int
}

/// A model with one plain index, for damage planted in its entries.
struct AuditItem: Codable, Persistable, Equatable, Sendable {
    static let indexes: [Index] = [.on("shelf")]
    var shelf: String
    var n: Int
}

/// What `damageIndexEntry` does to the entry it finds.
enum EntryDamage {
    /// Deletes the entry.
    case remove
    /// Adds, under the entry's key, one more entry naming the record key `recordKey`.
    case addEntry(naming: [UInt8])
}

/// Finds, with raw LMDB, the entry of the index whose entry keys start with `prefix` (its number)
/// that names the record key `record`, and damages it as a disk fault or a foreign program might.
/// Returns whether it was found and the damage committed. No LocalDatabase may have the directory
/// open in this process meanwhile.
func damageIndexEntry(_ directory: URL, prefix: [UInt8], record: [UInt8], _ damage: EntryDamage) -> Bool {
    var env: OpaquePointer?
    guard mdb_env_create(&env) == 0 else { return false }
    defer { mdb_env_close(env) }
    mdb_env_set_maxdbs(env, 16)
    guard mdb_env_open(env, directory.path, 0, 0o600) == 0 else { return false }
    var txn: OpaquePointer?
    guard mdb_txn_begin(env, nil, 0, &txn) == 0 else { return false }
    var dbi: MDB_dbi = 0
    var cursor: OpaquePointer?
    // `entries` is MDB_DUPSORT: the entry key, then the keys of the records that have it.
    guard mdb_dbi_open(txn, "entries", UInt32(MDB_DUPSORT), &dbi) == 0, mdb_cursor_open(txn, dbi, &cursor) == 0 else {
        mdb_txn_abort(txn)
        return false
    }
    var key = MDB_val()
    var value = MDB_val()
    var start = prefix
    var code = start.withUnsafeMutableBytes { (bytes: UnsafeMutableRawBufferPointer) -> Int32 in
        key = MDB_val(mv_size: bytes.count, mv_data: bytes.baseAddress)
        return mdb_cursor_get(cursor, &key, &value, MDB_SET_RANGE)
    }
    var entryKey: [UInt8]?
    while code == 0 {
        let found = Array(UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size))
        guard found.starts(with: prefix) else { break }
        if Array(UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size)) == record {
            entryKey = found
            break
        }
        code = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
    }
    var changed = false
    if let entryKey {
        switch damage {
        case .remove:
            changed = mdb_cursor_del(cursor, 0) == 0
        case let .addEntry(naming):
            var newKey = entryKey
            var newValue = naming
            changed = newKey.withUnsafeMutableBytes { (keyBytes: UnsafeMutableRawBufferPointer) -> Bool in
                newValue.withUnsafeMutableBytes { (valueBytes: UnsafeMutableRawBufferPointer) -> Bool in
                    var keyValue = MDB_val(mv_size: keyBytes.count, mv_data: keyBytes.baseAddress)
                    var dataValue = MDB_val(mv_size: valueBytes.count, mv_data: valueBytes.baseAddress)
                    return mdb_put(txn, dbi, &keyValue, &dataValue, 0) == 0
                }
            }
        }
    }
    mdb_cursor_close(cursor)
    guard changed else {
        mdb_txn_abort(txn)
        return false
    }
    return mdb_txn_commit(txn) == 0
}

@Suite("Indexes through batches in parts, index builds and damaged entries")
struct IndexPartsAndBuildTests {
    /// The part size of these tests' batches.
    static let part = 7

    /// A configuration whose batches of more than `part` records are written in parts.
    static func inParts(encryption: DatabaseEncryption? = nil) -> DatabaseConfiguration {
        var configuration = DatabaseConfiguration()
        configuration.batchPartRecords = part
        configuration.encryption = encryption
        return configuration
    }

    /// `prefix` and `number` on two digits at least: ids whose byte order is their numbers'.
    static func id(_ prefix: String, _ number: Int) -> String {
        number < 10 ? "\(prefix)0\(number)" : "\(prefix)\(number)"
    }

    static let tagSets: [[String]] = [[], ["red"], ["red", "blue"], ["green"], ["blue", "green", "red"]]

    /// The item `id`, its values drawn from `number` (no code when `number % 13 == 12`).
    static func item(_ id: String, _ number: Int) -> PartItem {
        PartItem(
            id: id, group: "g\(number % 4)", code: number % 13 == 12 ? nil : "c-\(id)",
            tags: tagSets[number % tagSets.count], rank: (number * 7) % 11)
    }

    /// `items` applied in order over `model` (the last write of an id wins).
    static func applied(_ items: [PartItem], over model: [String: PartItem] = [:]) -> [String: PartItem] {
        var model = model
        for item in items { model[item.id] = item }
        return model
    }

    static func records(_ items: [PartItem]) -> [Record<PartItem>] {
        items.map { Record(id: $0.id, data: $0) }
    }

    /// Five records written before the batch of `partedBatch()`.
    static func earlierItems() -> [PartItem] {
        (0..<5).map { item("pre\($0)", $0 + 100) }
    }

    /// 50 records, in 8 parts of 7 (the last alone): new records; in the seventh part, `p03`
    /// (of the first part) rewritten with other values in every index, `pre1` (written before
    /// the batch) rewritten with another code, `p10` rewritten keeping its own code; in the last
    /// part, a new record taking the code `p03` left.
    static func partedBatch() -> [PartItem] {
        var items = (0..<45).map { item(id("p", $0), $0) }  // 0–44: parts 1 to 7
        items.append(PartItem(id: "p03", group: "moved", code: "c-p03-moved", tags: ["yellow"], rank: 10))  // 45
        items.append(PartItem(id: "pre1", group: "g0", code: "c-pre1-new", tags: ["blue"], rank: 3))  // 46
        items.append(PartItem(id: "p10", group: "g3", code: "c-p10", tags: [], rank: 0))  // 47
        items.append(item("p48", 48))  // 48
        items.append(PartItem(id: "p49", group: "g1", code: "c-p03", tags: ["red", "green"], rank: 5))  // 49: part 8
        return items
    }

    /// Checks `read()` against `expected`, then every kind of query on `PartItem`'s indexes
    /// against the same filter of `read()`'s records in memory: equality (plain and on each
    /// element), ranges ordered both ways and paged, counts, the unique index's look-ups (and
    /// `absentCodes`, which no record may hold), `isNil`, and the integrity check.
    static func checkQueries(
        _ database: LocalDatabase, expected: [String: PartItem], absentCodes: [String] = [], _ label: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let all: [PartItem] = try await database.read()
        #expect(all == expected.keys.sorted().compactMap { expected[$0] }, "\(label): read()", sourceLocation: sourceLocation)
        #expect(try await database.count(PartItem.self) == expected.count, "\(label): count of the type", sourceLocation: sourceLocation)

        // Equality, by id.
        for group in Set(all.map(\.group)).sorted() + ["absent", "moved", "rewritten"] {
            let query = Query(PartItem.self).filter("group", .equals(group))
            let ids = all.filter { $0.group == group }.map(\.id)
            #expect(try await database.readIDs(query) == ids, "\(label): group \(group)", sourceLocation: sourceLocation)
            #expect(try await database.count(query) == ids.count, "\(label): count of group \(group)", sourceLocation: sourceLocation)
        }
        // Each element of an array, each record once, by id.
        for tag in ["red", "green", "blue", "yellow", "absent"] {
            let query = Query(PartItem.self).filter("tags", .equals(tag))
            let ids = all.filter { $0.tags.contains(tag) }.map(\.id)
            #expect(try await database.readIDs(query) == ids, "\(label): tag \(tag)", sourceLocation: sourceLocation)
            #expect(try await database.count(query) == ids.count, "\(label): count of tag \(tag)", sourceLocation: sourceLocation)
        }
        // Ranges, ordered by the value then the id; descending reverses both.
        for (low, high) in [(0, 3), (2, 7), (5, 100), (-5, 0), (11, 20), (0, 10)] {
            let ascending = all.filter { $0.rank >= low && $0.rank <= high }.sorted { ($0.rank, $0.id) < ($1.rank, $1.id) }.map(\.id)
            let range = Query(PartItem.self).filter("rank", .between(low, high))
            #expect(try await database.readIDs(range.sorted(by: "rank")) == ascending, "\(label): rank in \(low)...\(high)",
                    sourceLocation: sourceLocation)
            #expect(try await database.read(range.sorted(by: "rank", descending: true)).map(\.id) == Array(ascending.reversed()),
                    "\(label): rank in \(low)...\(high), descending", sourceLocation: sourceLocation)
            #expect(try await database.count(range) == ascending.count, "\(label): count of rank in \(low)...\(high)",
                    sourceLocation: sourceLocation)
            let page = try await database.readIDs(Query(PartItem.self).filter("rank", .atLeast(low)).sorted(by: "rank", descending: true).offset(2).limit(5))
            let atLeast = all.filter { $0.rank >= low }.sorted { ($0.rank, $0.id) > ($1.rank, $1.id) }.map(\.id)
            #expect(page == Array(atLeast.dropFirst(2).prefix(5)), "\(label): a page of rank ≥ \(low)", sourceLocation: sourceLocation)
        }
        // The unique index: each code finds its one holder; codes no record holds find none.
        for item in all {
            guard let code = item.code else { continue }
            let query = Query(PartItem.self).filter("code", .equals(code))
            #expect(try await database.readIDs(query) == [item.id], "\(label): code \(code)", sourceLocation: sourceLocation)
            #expect(try await database.first(query) == item, "\(label): the record of code \(code)", sourceLocation: sourceLocation)
        }
        for code in absentCodes {
            #expect(try await database.readIDs(Query(PartItem.self).filter("code", .equals(code))).isEmpty, "\(label): code \(code) is held by none",
                    sourceLocation: sourceLocation)
        }
        let noCode = all.filter { $0.code == nil }.map(\.id)
        #expect(try await database.readIDs(Query(PartItem.self).filter("code", .isNil)) == noCode, "\(label): no code", sourceLocation: sourceLocation)
        #expect(try await database.count(Query(PartItem.self).filter("code", .atLeast(""))) == all.count - noCode.count,
                "\(label): count of the codes", sourceLocation: sourceLocation)
        let report = try await database.verifyIntegrity()
        #expect(report.isConsistent, "\(label): \(report)", sourceLocation: sourceLocation)
    }

    // MARK: Batches in parts

    /// A batch written in parts keeps every index exact: entries of a record of an early part
    /// rewritten in a later one move, a unique value given up in one part may be taken in a
    /// later one, and counted runs follow. One commit.
    @Test func aBatchInPartsKeepsEveryIndexExact() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory.appendingPathComponent("db"), configuration: Self.inParts())
            #expect(database.configuration.batchPartRecords == Self.part)
            let earlier = Self.earlierItems()
            #expect(try await database.write(contentsOf: Self.records(earlier)) == earlier.count)  // whole: 5 ≤ 7
            let token = try database.changeToken()
            let batch = Self.partedBatch()
            #expect(batch.count > Self.part * 7)  // eight parts
            #expect(try await database.write(contentsOf: Self.records(batch)) == batch.count)
            #expect(try database.changes(since: token).commits.count == 1)
            let expected = Self.applied(batch, over: Self.applied(earlier))
            #expect(expected.count == 5 + 47)
            try await Self.checkQueries(database, expected: expected, absentCodes: ["c-pre1", "nobody"], "after the batch")
            // Reopened: the entries are on disk, not only in a cache.
            await database.close()
            let reopened = try LocalDatabase(directory: directory.appendingPathComponent("db"), configuration: Self.inParts())
            try await Self.checkQueries(reopened, expected: expected, absentCodes: ["c-pre1"], "reopened")
            await reopened.close()
        }
    }

    /// A unique value duplicated in the last part of a batch in parts: the typed error names
    /// both records, and nothing of the batch is stored, neither records nor entries (its first
    /// part, applied before the last was made, rewrote a record written before).
    @Test(arguments: [false, true])
    func aUniqueViolationInALaterPartStoresNothingOfTheBatch(duplicatingTheBatchItself: Bool) async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory.appendingPathComponent("db"), configuration: Self.inParts())
            let before = (0..<10).map { Self.item(Self.id("b", $0), $0) }
            #expect(try await database.write(contentsOf: Self.records(before)) == before.count)
            let model = Self.applied(before)
            try await Self.checkQueries(database, expected: model, "before")
            let count = try await database.count()
            let token = try database.changeToken()

            // Parts: 0–6, 7–13, 14–20, 21–27, then 28–29.
            var batch = (0..<29).map { Self.item(Self.id("n", $0), $0 + 20) }
            batch[3] = PartItem(id: "b05", group: "rewritten", code: "c-b05-new", tags: ["yellow"], rank: 9)
            // Either the code of a record written before, or that of a record of the batch's first part.
            let (holder, duplicate) = duplicatingTheBatchItself ? ("n02", "c-n02") : ("b03", "c-b03")
            #expect(batch.contains(where: { $0.id == holder && $0.code == duplicate }) || model[holder]?.code == duplicate)
            batch.append(PartItem(id: "n29", group: "g1", code: duplicate, tags: ["red"], rank: 1))
            let failing = Self.records(batch)
            await expectError({ $0 == .uniqueIndexViolation(className: "PartItem", index: "code unique", ids: [holder, "n29"]) }) {
                _ = try await database.write(contentsOf: failing)
            }

            // Exactly what was there before: records, entries, no commit.
            #expect(try await database.count() == count)
            #expect(try database.changes(since: token).commits.isEmpty)
            let heldBefore = Set(before.compactMap(\.code))
            let batchCodes = batch.compactMap(\.code).filter { !heldBefore.contains($0) }
            try await Self.checkQueries(database, expected: model, absentCodes: batchCodes, "after the failed batch")
            #expect((try await database.read(id: "b05") as PartItem?) == model["b05"])

            // The database goes on working: the batch without its duplicate is stored.
            let fixed = Array(batch.dropLast())
            #expect(try await database.write(contentsOf: Self.records(fixed)) == fixed.count)
            try await Self.checkQueries(database, expected: Self.applied(fixed, over: model), absentCodes: ["c-b05"], "after the batch without the duplicate")
        }
    }

    /// Parents written in parts with the children their references hold: every child is stored
    /// and readable, a child first referred to in the last part too, and a read resolves each
    /// id to one instance shared by every parent; the index on the reference's id is exact.
    @Test func referencesInABatchInParts() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory.appendingPathComponent("db"), configuration: Self.inParts())
            _ = try await database.count(Query(Car.self))  // Stores Car's index: the batch is then the one commit.
            let token = try database.changeToken()
            let owners = (0..<5).map { Owner(id: "o\($0)", name: "Owner \($0)") }
            let late = Owner(id: "o5", name: "Late")
            let count = 40
            let cars = (0..<count).map { number -> Car in
                let owner = number == count - 1 ? late : owners[number % 5]
                return Car(
                    plate: Self.id("P", number), owner: Reference(owner),
                    previousOwner: number % 3 == 0 ? Reference(owners[(number + 2) % 5]) : nil,
                    drivers: [Reference(owners[(number + 1) % 5]), Reference(owner)])
            }
            let records = cars.enumerated().map { Record(id: Self.id("car", $0.offset), data: $0.element) }
            // Counted with the children written with them (each at least once).
            #expect(try await database.write(contentsOf: records) >= records.count + 6)
            let feed = try database.changes(since: token)
            #expect(feed.commits.count == 1)
            let written = Set(feed.commits.flatMap(\.changes).compactMap { change -> String? in
                if case let .written(id, _) = change { return id }
                return nil
            })
            let ownerIDs = (0...5).map { "o\($0)" }
            #expect(written == Set(records.map(\.id) + ownerIDs))

            // Every child, by itself.
            #expect(try await database.readIDs(Owner.self) == ownerIDs)
            let names = Dictionary(uniqueKeysWithValues: (owners + [late]).map { ($0.id, $0.name) })
            for id in ownerIDs {
                #expect((try await database.read(id: id) as Owner?)?.name == names[id], "owner \(id)")
            }
            // Every parent, resolved: one instance per id across the read.
            let stored: [Car] = try await database.read()
            #expect(stored.map(\.plate) == cars.map(\.plate))
            var instances: [String: Owner] = [:]
            for car in stored {
                for reference in [car.owner] + (car.previousOwner.map { [$0] } ?? []) + car.drivers {
                    guard let model = reference.model else {
                        Issue.record("\(car.plate): \(reference.id) is not resolved")
                        continue
                    }
                    #expect(model.id == reference.id)
                    #expect(model.name == names[reference.id])
                    if let seen = instances[reference.id] {
                        #expect(seen === model, "\(car.plate): a second instance of \(reference.id)")
                    } else {
                        instances[reference.id] = model
                    }
                }
            }
            #expect(instances.keys.sorted() == ownerIDs)
            // The index on the reference's id, against the records read.
            for id in ownerIDs {
                let parents = try await database.read(Query(Car.self).filter("owner.$ref", .equals(id)))
                #expect(parents.map(\.plate) == stored.filter { $0.owner.id == id }.map(\.plate), "cars of \(id)")
                #expect(Set(parents.compactMap { $0.owner.model.map { ObjectIdentifier($0) } }).count == 1, "one instance of \(id)")
            }
            let report = try await database.verifyIntegrity()
            #expect(report.isConsistent, "\(report)")
        }
    }

    /// References' documentation: "A model a reference holds never replaces a record the batch
    /// itself was given under that id, whichever comes first: the record you pass is the one
    /// stored." Here the record given is in the first part and the reference in the last.
    @Test func aRecordGivenInAnEarlierPartIsNotReplacedByAReferencesModel() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory.appendingPathComponent("db"), configuration: Self.inParts())
            let stale = Link(number: 1, next: nil)
            let fillers = (0..<20).map { Record(id: Self.id("filler", $0), data: Link(number: 1000 + $0, next: nil)) }
            // In one part (3 records, made whole): the record given wins.
            try await database.write(contentsOf: [
                Record(id: "whole-tail", data: Link(number: 99, next: nil)), fillers[0],
                Record(id: "whole-head", data: Link(number: 0, next: Reference(stale, id: "whole-tail"))),
            ])
            #expect((try await database.read(id: "whole-tail") as Link?)?.number == 99)
            // The record given in part 1, the reference in part 4.
            let given = [Record(id: "parts-tail", data: Link(number: 99, next: nil))] + fillers
                + [Record(id: "parts-head", data: Link(number: 0, next: Reference(stale, id: "parts-tail")))]
            #expect(given.count > Self.part * 3)
            try await database.write(contentsOf: given)
            #expect((try await database.read(id: "parts-tail") as Link?)?.number == 99, "the record given in an earlier part was replaced")
            #expect((try await database.read(id: "parts-head") as Link?)?.next?.model?.number == 99)
            // The reference in part 1, the record given in part 4: the later record wins as well.
            let reversed = [Record(id: "late-head", data: Link(number: 0, next: Reference(stale, id: "late-tail")))] + fillers
                + [Record(id: "late-tail", data: Link(number: 99, next: nil))]
            try await database.write(contentsOf: reversed)
            #expect((try await database.read(id: "late-tail") as Link?)?.number == 99)
        }
    }

    /// On an encrypted database, a batch in parts keeps the indexes exact too (their entries are
    /// made from the opened documents), and the values are sealed on disk.
    @Test func anEncryptedBatchInPartsKeepsEveryIndexExact() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("db")
            let key = try EncryptionKey(id: "k1", bytes: [UInt8](repeating: 7, count: 32))
            let configuration = Self.inParts(encryption: DatabaseEncryption(try AESGCMCipher(current: key)))
            let database = try LocalDatabase(directory: url, configuration: configuration)
            let earlier = Self.earlierItems()
            _ = try await database.write(contentsOf: Self.records(earlier))
            let batch = Self.partedBatch()
            #expect(try await database.write(contentsOf: Self.records(batch)) == batch.count)
            let expected = Self.applied(batch, over: Self.applied(earlier))
            try await Self.checkQueries(database, expected: expected, absentCodes: ["c-pre1", "nobody"], "encrypted")
            await database.close()
            #expect(rawGet(url, "records", Array("p07".utf8))?.first == RecordValue.sealedFormatVersion)
            #expect(rawGet(url, "records", Array("p49".utf8))?.first == RecordValue.sealedFormatVersion)
            let reopened = try LocalDatabase(directory: url, configuration: configuration)
            try await Self.checkQueries(reopened, expected: expected, absentCodes: ["c-pre1"], "encrypted, reopened")
            await reopened.close()
        }
    }

    // MARK: Index builds

    /// `b` and `number` on five digits: ids whose byte order is their numbers'.
    static func buildID(_ number: Int) -> String {
        let digits = String(number)
        return "b" + String(repeating: "0", count: max(0, 5 - digits.count)) + digits
    }

    /// The build test's queries, as ids (a count as its number).
    static func buildQuery(_ kind: Int, on database: LocalDatabase) async throws -> [String] {
        switch kind {
        case 0:
            return try await database.readIDs(Query(BuildItem.self).filter("bucket", .equals(3)))
        case 1:
            return try await database.read(Query(BuildItem.self).filter("bucket", .between(2, 4)).sorted(by: "bucket", descending: true))
                .map { buildID($0.n) }
        default:
            return [String(try await database.count(Query(BuildItem.self).filter("bucket", .equals(7))))]
        }
    }
}

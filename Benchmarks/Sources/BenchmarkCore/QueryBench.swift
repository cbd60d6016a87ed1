import CLMDBRaw
import Foundation
import GRDB
import LocalLMDB

/// The query workload of the comparison: N orders with a unique customer, a total and a status,
/// queried by LocalLMDB through declared indexes, SwiftLocal's way (read every order, filter in
/// Swift: on LocalLMDB, its fastest form), GRDB with indexed columns, and raw LMDB with a
/// sorted-duplicates index by hand. Best of R repetitions, the same random queries for all.
public enum QueryBench {
    /// An order for queries: ~150 bytes of JSON. Its `total` index is counted (`Index.on(_:unique:counted:)`).
    public struct QueryOrder: Codable, Persistable, Sendable {
        public static let indexes: [Index] = [.on("customer", unique: true), .on("total", counted: true), .on("status", "total")]
        public var customer: String
        public var total: Int
        public var status: String
        public var note: String

        static func make(_ index: Int) -> QueryOrder {
            var generator = SplitMix(state: UInt64(index) &* 0x9E37_79B9_7F4A_7C15)
            let total = Int(generator.next() % 1_000_000)
            return QueryOrder(
                customer: String(format: "customer-%08d", index), total: total,
                status: ["open", "paid", "shipped", "returned"][Int(generator.next() % 4)],
                note: "order \(index) of the query workload, with a little text to read")
        }
    }

    /// The same order, stored with no index (for the cost of indexes on writes).
    public struct UnindexedOrder: Codable, Persistable, Sendable {
        public var customer: String
        public var total: Int
        public var status: String
        public var note: String
    }

    struct SplitMix {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    struct GRDBOrder: Codable, FetchableRecord, PersistableRecord {
        static let databaseTableName = "queryOrder"
        var id: String
        var customer: String
        var total: Int
        var status: String
        var note: String
    }

    /// One row of the table: operations per second (or seconds) for each contender.
    struct Row {
        let workload: String
        var values: [String: Double] = [:]
    }

    static let contenders = ["LocalLMDB (index)", "read all + filter", "GRDB (index)", "raw LMDB (index)"]

    /// Runs the workload for each count and returns its markdown section.
    public static func run(counts: [Int], repetitions: Int, log: (String) -> Void) async throws -> String {
        var sections: [String] = []
        for count in counts {
            sections.append(try await runOnce(count: count, repetitions: repetitions, log: log))
        }
        return sections.joined(separator: "\n")
    }

    static func seconds(_ body: () async throws -> Void) async rethrows -> Double {
        let start = ContinuousClock.now
        try await body()
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    static func best(_ repetitions: Int, _ body: () async throws -> Double) async rethrows -> Double {
        var best = Double.infinity
        for _ in 0..<max(1, repetitions) { best = min(best, try await body()) }
        return best
    }

    static func runOnce(count: Int, repetitions: Int, log: (String) -> Void) async throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("query-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let orders = (0..<count).map(QueryOrder.make)
        let ids = (0..<count).map { String(format: "o%08d", $0) }
        var random = SplitMix(state: 42)
        let lookups = (0..<1000).map { _ in Int(random.next() % UInt64(count)) }
        let lowerBounds = (0..<200).map { _ in Int(random.next() % 990_000) }
        var rows: [Row] = []

        // Set-up: every contender stores the orders.
        log("queries, \(count) orders: writing…")
        let local = try LocalDatabase(directory: directory.appendingPathComponent("local"))
        let writeIndexed = try await seconds { _ = try await local.write(contentsOf: zip(ids, orders).map { Record(id: $0, data: $1) }) }
        let plain = try LocalDatabase(directory: directory.appendingPathComponent("plain"))
        let unindexed = zip(ids, orders).map { Record(id: $0, data: UnindexedOrder(customer: $1.customer, total: $1.total, status: $1.status, note: $1.note)) }
        let writePlain = try await seconds { _ = try await plain.write(contentsOf: unindexed) }
        let grdb = try DatabasePool(path: directory.appendingPathComponent("grdb.sqlite").path)
        try await grdb.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        try await grdb.write { db in
            try db.create(table: GRDBOrder.databaseTableName) { table in
                table.primaryKey("id", .text)
                table.column("customer", .text).notNull().unique()
                table.column("total", .integer).notNull().indexed()
                table.column("status", .text).notNull()
                table.column("note", .text).notNull()
            }
            try db.create(index: "queryOrder_status_total", on: GRDBOrder.databaseTableName, columns: ["status", "total"])
        }
        try await grdb.write { db in
            for (id, order) in zip(ids, orders) {
                try GRDBOrder(id: id, customer: order.customer, total: order.total, status: order.status, note: order.note).insert(db)
            }
        }
        let raw = try RawIndexedLMDB(directory: directory.appendingPathComponent("raw"), orders: orders, ids: ids)
        // The floor of the cost of indexes: raw LMDB writing the same JSON with and without the
        // three index entries by hand (best of two fresh stores each).
        var rawWrite: [Bool: Double] = [:]
        for indexed in [false, true, false, true] {
            let seconds = try RawIndexedLMDB.writeSeconds(
                directory: directory.appendingPathComponent("raw-write-\(UUID().uuidString)"), orders: orders, ids: ids, indexed: indexed)
            rawWrite[indexed] = min(rawWrite[indexed] ?? .infinity, seconds)
        }

        // Equality returning one record.
        log("queries, \(count) orders: equality…")
        var equality = Row(workload: "equality, one record (queries/s)")
        equality.values[contenders[0]] = Double(lookups.count) / (try await best(repetitions) {
            try await seconds { for index in lookups { _ = try await local.first(Query(QueryOrder.self).filter("customer", .equals(orders[index].customer))) } }
        })
        let scanned = Array(lookups.prefix(count >= 1_000_000 ? 2 : 10))
        equality.values[contenders[1]] = Double(scanned.count) / (try await best(min(repetitions, 2)) {
            try await seconds {
                for index in scanned {
                    let all: [QueryOrder] = try await local.read()
                    _ = all.first { $0.customer == orders[index].customer }
                }
            }
        })
        equality.values[contenders[2]] = Double(lookups.count) / (try await best(repetitions) {
            try await seconds {
                for index in lookups {
                    _ = try await grdb.read { db in try GRDBOrder.filter(Column("customer") == orders[index].customer).fetchOne(db) }
                }
            }
        })
        equality.values[contenders[3]] = Double(lookups.count) / (try await best(repetitions) {
            try await seconds { for index in lookups { _ = try raw.byCustomer(orders[index].customer) } }
        })
        rows.append(equality)

        // A page of 50 from a range, ordered.
        log("queries, \(count) orders: pages…")
        var page = Row(workload: "page of 50 from a range, ordered (pages/s)")
        page.values[contenders[0]] = Double(lowerBounds.count) / (try await best(repetitions) {
            try await seconds {
                for lower in lowerBounds { _ = try await local.read(Query(QueryOrder.self).filter("total", .atLeast(lower)).sorted(by: "total").limit(50)) }
            }
        })
        let scannedBounds = Array(lowerBounds.prefix(count >= 1_000_000 ? 2 : 10))
        page.values[contenders[1]] = Double(scannedBounds.count) / (try await best(min(repetitions, 2)) {
            try await seconds {
                for lower in scannedBounds {
                    let all: [QueryOrder] = try await local.read()
                    _ = all.filter { $0.total >= lower }.sorted { $0.total < $1.total }.prefix(50)
                }
            }
        })
        page.values[contenders[2]] = Double(lowerBounds.count) / (try await best(repetitions) {
            try await seconds {
                for lower in lowerBounds {
                    _ = try await grdb.read { db in try GRDBOrder.filter(Column("total") >= lower).order(Column("total")).limit(50).fetchAll(db) }
                }
            }
        })
        page.values[contenders[3]] = Double(lowerBounds.count) / (try await best(repetitions) {
            try await seconds { for lower in lowerBounds { _ = try raw.page(from: lower, limit: 50) } }
        })
        rows.append(page)

        // The count of a range.
        log("queries, \(count) orders: counts…")
        var counting = Row(workload: "count of a range of 1% (counts/s)")
        counting.values[contenders[0]] = Double(lowerBounds.count) / (try await best(repetitions) {
            try await seconds {
                for lower in lowerBounds { _ = try await local.count(Query(QueryOrder.self).filter("total", .between(lower, lower + 9_999))) }
            }
        })
        counting.values[contenders[1]] = Double(scannedBounds.count) / (try await best(min(repetitions, 2)) {
            try await seconds {
                for lower in scannedBounds {
                    let all: [QueryOrder] = try await local.read()
                    _ = all.count { $0.total >= lower && $0.total <= lower + 9_999 }
                }
            }
        })
        counting.values[contenders[2]] = Double(lowerBounds.count) / (try await best(repetitions) {
            try await seconds {
                for lower in lowerBounds {
                    _ = try await grdb.read { db in try GRDBOrder.filter(Column("total") >= lower && Column("total") <= lower + 9_999).fetchCount(db) }
                }
            }
        })
        counting.values[contenders[3]] = Double(lowerBounds.count) / (try await best(repetitions) {
            try await seconds { for lower in lowerBounds { _ = try raw.count(from: lower, to: lower + 9_999) } }
        })
        rows.append(counting)

        let typed = try await TypedQueryBench.run(
            directory: directory, orders: orders, ids: ids, lookups: lookups, lowerBounds: lowerBounds, repetitions: repetitions, log: log)

        // Building one index over the stored records, against the time it took to write them.
        log("queries, \(count) orders: building an index…")
        _ = try await local.dropIndex(.on("total", counted: true), of: QueryOrder.self)
        let build = try await seconds { _ = try await local.count(Query(QueryOrder.self).filter("customer", .equals("none"))) }
        await local.close()
        await plain.close()

        var table = "#### Queries over \(count) orders (\(Self.jsonBytes(orders[0])) bytes of JSON each)\n\n"
        table += "| workload | " + contenders.joined(separator: " | ") + " | LocalLMDB ÷ GRDB | LocalLMDB ÷ raw |\n"
        table += "|---|" + String(repeating: "---:|", count: contenders.count + 2) + "\n"
        for row in rows {
            let cells = contenders.map { row.values[$0].map(Self.format) ?? "–" }
            let local = row.values[contenders[0]] ?? 0
            let versusGRDB = row.values[contenders[2]].map { String(format: "%.1f×", local / $0) } ?? "–"
            let versusRaw = row.values[contenders[3]].map { String(format: "%.2f×", local / $0) } ?? "–"
            table += "| \(row.workload) | " + cells.joined(separator: " | ") + " | \(versusGRDB) | \(versusRaw) |\n"
        }
        table += "\nLocalLMDB writing the \(count) orders in one batch: \(String(format: "%.2f", writeIndexed)) s with the three indexes, "
        table += "\(String(format: "%.2f", writePlain)) s with none (throughput with indexes: \(String(format: "%.2f", writePlain / writeIndexed))× without). "
        table += "Building the `total` index over them (dropped, then declared again): \(String(format: "%.2f", build)) s, "
        table += "\(String(format: "%.2f", build / writePlain))× the time to write them without indexes.\n"
        if let rawPlain = rawWrite[false], let rawIndexed = rawWrite[true] {
            table += "Raw LMDB writing the same JSON in one transaction, the three index entries put by hand (the unique one with `MDB_NOOVERWRITE`): "
            table += "\(String(format: "%.2f", rawIndexed)) s, \(String(format: "%.2f", rawPlain)) s without (throughput with them: \(String(format: "%.2f", rawPlain / rawIndexed))× without).\n"
        }
        table += "Read all + filter reads every order of the type per query through LocalLMDB (SwiftLocal's only way), on fewer queries.\n"
        table += TypedQueryBench.markdown(typed, grdbEquality: equality.values[contenders[2]], grdbPage: page.values[contenders[2]], count: count)
        return table
    }

    static func format(_ value: Double) -> String {
        value >= 100 ? String(format: "%.0f", value) : String(format: "%.2f", value)
    }

    static func jsonBytes(_ order: QueryOrder) -> Int {
        (try? JSONEncoder().encode(order).count) ?? 0
    }
}

/// Raw LMDB with the indexes by hand: `orders` id → JSON, `customers` (customer → id) and
/// `totals` (`MDB_DUPSORT`, the total as 8 big-endian bytes → id). Reads decode the JSON with
/// `JSONDecoder`-free parsing: they copy the value out, as the floor of a read.
final class RawIndexedLMDB: @unchecked Sendable {
    let env: OpaquePointer
    var orders: MDB_dbi = 0
    var customers: MDB_dbi = 0
    var totals: MDB_dbi = 0

    struct Failure: Error { let code: Int32 }

    static func check(_ code: Int32) throws {
        if code != 0 { throw Failure(code: code) }
    }

    init(directory: URL, orders list: [QueryBench.QueryOrder], ids: [String]) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var handle: OpaquePointer?
        try Self.check(mdb_env_create(&handle))
        guard let handle else { throw Failure(code: -1) }
        env = handle
        try Self.check(mdb_env_set_mapsize(env, 8 << 30))
        try Self.check(mdb_env_set_maxdbs(env, 4))
        try Self.check(mdb_env_open(env, directory.path, UInt32(MDB_NOTLS), 0o600))
        var txn: OpaquePointer?
        try Self.check(mdb_txn_begin(env, nil, 0, &txn))
        try Self.check(mdb_dbi_open(txn, "orders", UInt32(MDB_CREATE), &orders))
        try Self.check(mdb_dbi_open(txn, "customers", UInt32(MDB_CREATE), &customers))
        try Self.check(mdb_dbi_open(txn, "totals", UInt32(MDB_CREATE | MDB_DUPSORT), &totals))
        let encoder = JSONEncoder()
        for (id, order) in zip(ids, list) {
            let json = try encoder.encode(order)
            try put(txn, orders, Array(id.utf8), Array(json))
            try put(txn, customers, Array(order.customer.utf8), Array(id.utf8))
            try put(txn, totals, Self.totalKey(order.total), Array(id.utf8))
        }
        try Self.check(mdb_txn_commit(txn))
    }

    deinit { mdb_env_close(env) }

    /// Seconds to write `list` in one durable transaction of a fresh store: the records (JSON
    /// encoded beforehand) and, when `indexed`, the entries of the comparison's three indexes
    /// (`customer` unique, `total`, `status` then `total`) with no other work.
    static func writeSeconds(directory: URL, orders list: [QueryBench.QueryOrder], ids: [String], indexed: Bool) throws -> Double {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var handle: OpaquePointer?
        try check(mdb_env_create(&handle))
        guard let env = handle else { throw Failure(code: -1) }
        defer { mdb_env_close(env) }
        try check(mdb_env_set_mapsize(env, 8 << 30))
        try check(mdb_env_set_maxdbs(env, 4))
        try check(mdb_env_open(env, directory.path, UInt32(MDB_NOTLS), 0o600))
        var orders: MDB_dbi = 0, customers: MDB_dbi = 0, totals: MDB_dbi = 0, statusTotals: MDB_dbi = 0
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, 0, &txn))
        try check(mdb_dbi_open(txn, "orders", UInt32(MDB_CREATE), &orders))
        try check(mdb_dbi_open(txn, "customers", UInt32(MDB_CREATE | MDB_DUPSORT), &customers))
        try check(mdb_dbi_open(txn, "totals", UInt32(MDB_CREATE | MDB_DUPSORT), &totals))
        try check(mdb_dbi_open(txn, "statusTotals", UInt32(MDB_CREATE | MDB_DUPSORT), &statusTotals))
        try check(mdb_txn_commit(txn))
        let encoder = JSONEncoder()
        let rows: [(id: [UInt8], json: [UInt8], customer: [UInt8], total: [UInt8], statusTotal: [UInt8])] = try zip(ids, list).map { id, order in
            (Array(id.utf8), Array(try encoder.encode(order)), Array(order.customer.utf8), totalKey(order.total), Array(order.status.utf8) + [0] + totalKey(order.total))
        }
        func put(_ txn: OpaquePointer?, _ dbi: MDB_dbi, _ key: [UInt8], _ value: [UInt8], _ flags: Int32) throws {
            try key.withUnsafeBytes { key in
                try value.withUnsafeBytes { value in
                    var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
                    var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
                    try check(mdb_put(txn, dbi, &k, &v, UInt32(flags)))
                }
            }
        }
        let start = ContinuousClock.now
        try check(mdb_txn_begin(env, nil, 0, &txn))
        for row in rows {
            try put(txn, orders, row.id, row.json, 0)
            if indexed {
                try put(txn, customers, row.customer, row.id, MDB_NOOVERWRITE)
                try put(txn, totals, row.total, row.id, MDB_NODUPDATA)
                try put(txn, statusTotals, row.statusTotal, row.id, MDB_NODUPDATA)
            }
        }
        try check(mdb_txn_commit(txn))
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    static func totalKey(_ total: Int) -> [UInt8] {
        withUnsafeBytes(of: (UInt64(bitPattern: Int64(total)) ^ (1 << 63)).bigEndian, Array.init)
    }

    private func put(_ txn: OpaquePointer?, _ dbi: MDB_dbi, _ key: [UInt8], _ value: [UInt8]) throws {
        try key.withUnsafeBytes { key in
            try value.withUnsafeBytes { value in
                var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
                var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
                try Self.check(mdb_put(txn, dbi, &k, &v, 0))
            }
        }
    }

    private func reading<R>(_ body: (OpaquePointer?) throws -> R) throws -> R {
        var txn: OpaquePointer?
        try Self.check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn))
        defer { mdb_txn_abort(txn) }
        return try body(txn)
    }

    private func value(_ txn: OpaquePointer?, _ dbi: MDB_dbi, _ key: UnsafeRawBufferPointer) -> [UInt8]? {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val()
        guard mdb_get(txn, dbi, &k, &v) == 0 else { return nil }
        return Array(UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))
    }

    /// The order's JSON for a customer: two look-ups, the bytes copied out.
    func byCustomer(_ customer: String) throws -> [UInt8]? {
        try reading { txn in
            let id = Array(customer.utf8).withUnsafeBytes { value(txn, customers, $0) }
            return id.flatMap { id in id.withUnsafeBytes { value(txn, orders, $0) } }
        }
    }

    /// The JSON of the first `limit` orders with a total of at least `lower`, by total.
    func page(from lower: Int, limit: Int) throws -> [[UInt8]] {
        try reading { txn in
            var cursor: OpaquePointer?
            try Self.check(mdb_cursor_open(txn, totals, &cursor))
            defer { mdb_cursor_close(cursor) }
            var results: [[UInt8]] = []
            var start = Self.totalKey(lower)
            start.withUnsafeMutableBytes { start in
                var k = MDB_val(mv_size: start.count, mv_data: start.baseAddress)
                var v = MDB_val()
                var code = mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE)
                while code == 0, results.count < limit {
                    let id = UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)
                    if let json = value(txn, orders, id) { results.append(json) }
                    code = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)
                }
            }
            return results
        }
    }

    /// The number of orders with a total from `lower` to `upper`: a cursor walk of the keys,
    /// counting each key's duplicates.
    func count(from lower: Int, to upper: Int) throws -> Int {
        try reading { txn in
            var cursor: OpaquePointer?
            try Self.check(mdb_cursor_open(txn, totals, &cursor))
            defer { mdb_cursor_close(cursor) }
            var total = 0
            var start = Self.totalKey(lower)
            let end = Self.totalKey(upper)
            start.withUnsafeMutableBytes { start in
                var k = MDB_val(mv_size: start.count, mv_data: start.baseAddress)
                var v = MDB_val()
                var code = mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE)
                while code == 0 {
                    let key = UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size)
                    if end.lexicographicallyPrecedes(key) { break }
                    var duplicates = 0
                    mdb_cursor_count(cursor, &duplicates)
                    total += duplicates
                    code = mdb_cursor_get(cursor, &k, &v, MDB_NEXT_NODUP)
                }
            }
            return total
        }
    }
}

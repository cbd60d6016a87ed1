import Foundation
import LocalLMDB
import LocalLMDBPostgres
import LocalLMDBTestSupport
import PostgresNIO
import Testing

/// The tests' PostgreSQL server: the one `scripts/postgres start` runs (a private cluster on a
/// loopback port). `scripts/test` starts it and exports its `LOCALLMDB_POSTGRES_*` variables;
/// a test run without them (`swift test` alone) starts it itself through the same script.
enum PostgresServer {
    struct Address: Sendable {
        let host: String
        let port: Int
        let user: String
        let password: String
        let database: String
        let directory: String
        /// The database that accepts TLS connections only, and the certificate authority that
        /// signed the server's certificate (nil from a server started without them).
        let tlsDatabase: String?
        let caFile: String?
    }

    static let address: Result<Address, ServerUnavailable> = {
        var environment = ProcessInfo.processInfo.environment
        if environment["LOCALLMDB_POSTGRES_PORT"] == nil {
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("scripts/postgres")
            let text: String
            do {
                let process = try ChildProcess(script.path, ["start"], output: .pipe)
                text = process.output?.readText() ?? ""
                let ended = process.waitUntilExit()
                guard ended.succeeded else { return .failure(ServerUnavailable(reason: "scripts/postgres start failed (\(ended))")) }
            } catch {
                return .failure(ServerUnavailable(reason: "cannot run \(script.path): \(error)"))
            }
            for line in text.split(separator: "\n") {
                let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
                if parts.count == 2 { environment[parts[0]] = parts[1] }
            }
        }
        guard let host = environment["LOCALLMDB_POSTGRES_HOST"], let port = environment["LOCALLMDB_POSTGRES_PORT"].flatMap(Int.init),
              let user = environment["LOCALLMDB_POSTGRES_USER"], let password = environment["LOCALLMDB_POSTGRES_PASSWORD"],
              let database = environment["LOCALLMDB_POSTGRES_DATABASE"], let directory = environment["LOCALLMDB_POSTGRES_DIR"]
        else { return .failure(ServerUnavailable(reason: "scripts/postgres start printed no address")) }
        return .success(Address(
            host: host, port: port, user: user, password: password, database: database, directory: directory,
            tlsDatabase: environment["LOCALLMDB_POSTGRES_TLS_DATABASE"], caFile: environment["LOCALLMDB_POSTGRES_CA_FILE"]))
    }()

    struct ServerUnavailable: Error, CustomStringConvertible {
        let reason: String
        var description: String { "The tests' PostgreSQL server is not available: \(reason). Start it with scripts/postgres start." }
    }

    /// The connection configuration of the tests' server (its database `database`, the tests' by default).
    static func configuration(database: String? = nil, tls: PostgresConnection.Configuration.TLS = .disable) throws -> PostgresConnection.Configuration {
        let address = try address.get()
        return PostgresConnection.Configuration(
            host: address.host, port: address.port, username: address.user, password: address.password,
            database: database ?? address.database, tls: tls)
    }

    /// A store name no other test uses.
    static func uniqueStore(_ label: String = #function) -> String {
        "test-\(label.prefix(40))-\(UUID().uuidString)"
    }

    /// A database on a fresh store of the tests' server, closed after `body`.
    static func withDatabase<R>(
        store: String = uniqueStore(), connections: Int = 4, _ body: (PostgresStore) async throws -> R
    ) async throws -> R {
        try await closing(PostgresStore(configuration: configuration(), name: store, connections: connections), body)
    }

    /// A raw connection to the tests' server, closed after `body`: for tests that look at the
    /// tables themselves.
    static func withConnection<R>(_ body: (PostgresConnection) async throws -> R) async throws -> R {
        let connection = try await PostgresConnection.connect(configuration: configuration(), id: 1, logger: Logger(label: "tests"))
        do {
            let result = try await body(connection)
            try await connection.close()
            return result
        } catch {
            try? await connection.close()
            throw error
        }
    }

    /// Waits (at most 30 s) until a session of the server waits for a lock: a write the test
    /// holds off has reached its wait. False when none did.
    static func someoneWaitsForALock() async throws -> Bool {
        try await eventually {
            try await withConnection { watcher in
                let rows = try await watcher.query("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'", logger: Logger(label: "tests"))
                for try await count in rows.decode(Int.self) { return count >= 1 }
                return false
            }
        }
    }

    /// Runs `pg_ctl` on the tests' server (`restart`, `stop`, `start`) through scripts/postgres's cluster.
    static func control(_ action: String) throws {
        let address = try address.get()
        let bin = try FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql").sorted().last.map { "/usr/lib/postgresql/\($0)/bin/pg_ctl" }
            ?? "pg_ctl"
        // The server's settings are in its configuration file (scripts/postgres writes them there).
        var arguments = [bin, "-D", address.directory + "/data", "-w", "-t", "60", "-l", address.directory + "/server.log"]
        if action == "stop" { arguments += ["-m", "fast"] }
        arguments.append(action)
        if getuid() == 0 { arguments = ["/usr/sbin/runuser", "-u", "postgres", "--"] + arguments }
        // Not Foundation's Process: it missed runuser's exit here (left a zombie and waited
        // forever). The server started inherits none of this process's descriptors.
        guard let process = try? ChildProcess(arguments[0], Array(arguments.dropFirst())) else {
            throw ServerUnavailable(reason: "cannot run pg_ctl \(action)")
        }
        let ended = process.waitUntilExit()
        guard ended.succeeded else { throw ServerUnavailable(reason: "pg_ctl \(action) failed (\(ended))") }
    }
}

/// `body`'s result, with `database` closed after it, whether it returns or throws.
func closing<Database: ObjectDatabase, R>(_ database: Database, _ body: (Database) async throws -> R) async throws -> R {
    do {
        let result = try await body(database)
        await database.close()
        return result
    } catch {
        await database.close()
        throw error
    }
}

/// Every suite that uses the tests' server, one test at a time: one of them stops and starts the
/// server, which the others must not see.
@Suite("PostgreSQL", .serialized)
enum PostgresTests {}

/// The engines every shared test runs on.
enum TestEngine: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case lmdb
    case postgres

    var testDescription: String { rawValue }

    /// A fresh database on this engine (a temporary directory, or a new store), closed after `body`.
    func withDatabase<R>(_ body: (any ObjectDatabase) async throws -> R) async throws -> R {
        switch self {
        case .lmdb:
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("locallmdb-pg-tests-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            return try await closing(LocalDatabase(directory: directory)) { try await body($0) }
        case .postgres:
            return try await PostgresServer.withDatabase { try await body($0) }
        }
    }
}

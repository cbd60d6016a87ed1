import Foundation
import LocalLMDB
import LocalLMDBPostgres
import LocalLMDBTestSupport
import PostgresNIO
import Testing

extension PostgresTests {
    /// A store per user: `PostgresStore.provision` lets one role open one store, and nothing of
    /// the others, whatever statements its holder sends.
    @Suite("PostgreSQL stores per user", .serialized)
    struct StoreAccessTests {
        /// A login role with a random password, its name with a quote, a space and a semicolon
        /// (the server quotes it in every statement that names it).
        static func makeRole(_ label: String) async throws -> (name: String, password: String) {
            let name = "device \"\(label)\"; --\(UUID().uuidString.prefix(8))"
            let password = UUID().uuidString
            try await PostgresServer.withConnection { connection in
                let logger = Logger(label: "tests")
                let rows = try await connection.query("SELECT format('CREATE ROLE %I LOGIN PASSWORD %L', \(name), \(password))", logger: logger)
                for try await statement in rows.decode(String.self) {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
            }
            return (name, password)
        }

        /// The tests' server, as `role`.
        static func configuration(_ role: (name: String, password: String)) throws -> PostgresConnection.Configuration {
            let address = try PostgresServer.address.get()
            return PostgresConnection.Configuration(
                host: address.host, port: address.port, username: role.name, password: role.password, database: address.database, tls: .disable)
        }

        @Test("A device opens its user's store and nothing else: a hostile device process reaches nothing of another user's")
        func hostileDevice() async throws {
            let helper = try replicationHelper()
            let alice = try await Self.makeRole("alice")
            let bob = try await Self.makeRole("bob")
            let aliceStore = PostgresServer.uniqueStore("alice")
            let bobStore = PostgresServer.uniqueStore("bob")
            try await PostgresStore.provision(aliceStore, for: alice.name, configuration: PostgresServer.configuration())
            try await PostgresStore.provision(bobStore, for: bob.name, configuration: PostgresServer.configuration())
            // Provisioning again (after an upgrade, say) changes nothing.
            try await PostgresStore.provision(bobStore, for: bob.name, configuration: PostgresServer.configuration())
            // Bob's device: its store works as any store does.
            let bobToken = try await closing(PostgresStore(configuration: Self.configuration(bob), name: bobStore, connections: 2)) { store in
                try await store.write(Record(id: "secret", data: Note(text: "bob's")))
                try await store.write(Record(id: "t", data: Ticket(queue: "q", priority: 1, title: "bob's ticket")))
                #expect(try await store.readIDs(Query(Ticket.self).filter("queue", .equals("q"))) == ["t"])
                return try await store.changeToken()
            }

            // Alice's device, hostile, in a process of its own, with her credentials.
            let address = try PostgresServer.address.get()
            var environment = helperEnvironment(address)
            environment["LOCALLMDB_POSTGRES_USER"] = alice.name
            environment["LOCALLMDB_POSTGRES_PASSWORD"] = alice.password
            let process = try ChildProcess(helper.path, ["hostile", aliceStore, bobStore], environment: environment, output: .pipe)
            let output = process.output?.readText() ?? ""
            #expect(process.waitUntilExit().succeeded)
            var outcomes: [String: String] = [:]
            for line in output.split(separator: "\n") {
                let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
                outcomes[parts[0]] = parts.count > 1 ? parts[1] : ""
            }
            #expect(outcomes["own-store"] == "ok 1", "\(output)")
            #expect(outcomes["open-other"] == "refused")
            #expect(outcomes["see-row"] == "rows 0")
            #expect(outcomes["see-rows"] == "rows 1")
            #expect(outcomes["update-row"] == "rows 0")
            #expect(outcomes["delete-row"] == "refused")
            for attempt in [
                "read-records", "read-log", "read-classes", "read-entries", "take-row", "write-sequencer", "write-records", "delete-log",
                "drop-table", "alter-table", "take-ticks", "join-role", "become-role", "drop-policy", "disable-security", "create-table",
            ] {
                #expect(outcomes[attempt] == "refused", "\(attempt): \(outcomes[attempt] ?? "no line")")
            }
            #expect(outcomes["done"] != nil)

            // Bob's store as he left it: its records, its row, its log.
            try await closing(PostgresStore(configuration: Self.configuration(bob), name: bobStore, connections: 2)) { store in
                let note: Note? = try await store.read(id: "secret")
                #expect(note?.text == "bob's")
                #expect(try await store.count() == 2)
                #expect(try await store.changes(since: bobToken).commits.isEmpty)
                try await store.write(Record(id: "later", data: Note(text: "still bob's")))
                #expect(try await store.changes(since: bobToken).commits.count == 1)
            }
            // Alice's own write is there.
            try await closing(PostgresStore(configuration: Self.configuration(alice), name: aliceStore, connections: 1)) { store in
                let note: Note? = try await store.read(id: "mine")
                #expect(note?.text == "the device's own")
            }

            // Taken back: her next connections cannot open it.
            try await PostgresStore.revoke(aliceStore, from: alice.name, configuration: PostgresServer.configuration())
            await #expect(throws: LocalDatabaseError.self) {
                try await PostgresStore(configuration: Self.configuration(alice), name: aliceStore, connections: 1)
            }
        }

        @Test("Provisioning for a role that does not exist is a typed error, and grants nothing")
        func unknownRole() async throws {
            let store = PostgresServer.uniqueStore()
            do {
                try await PostgresStore.provision(store, for: "no such role \(UUID())", configuration: PostgresServer.configuration())
                Issue.record("a store was provisioned for a role that does not exist")
            } catch let error as LocalDatabaseError {
                guard case let .server(_, message) = error else { throw error }
                #expect(message.contains("no role named"))
            }
        }
    }
}

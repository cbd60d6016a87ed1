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

        @Test("Synchronization turned on for a store provisioned before it existed: the device role's writes and pushes go on")
        func enableSyncOnAProvisionedStore() async throws {
            let role = try await Self.makeRole("sync")
            let name = PostgresServer.uniqueStore("sync")
            try await PostgresStore.provision(name, for: role.name, configuration: PostgresServer.configuration())
            let prefix = PostgresStore.tablePrefix(of: name)
            let logger = Logger(label: "tests")
            // As an earlier version provisioned it: no synchronization tables, no trigger.
            try await PostgresServer.withConnection { admin in
                try await admin.query(PostgresQuery(unsafeSQL: "DROP TRIGGER \(prefix)_stamp ON \(prefix)_records"), logger: logger)
                try await admin.query(PostgresQuery(unsafeSQL: "DROP TABLE \(prefix)_sync, \(prefix)_conflicts"), logger: logger)
            }
            let owner = try await PostgresStore(configuration: PostgresServer.configuration(), name: name, connections: 1)
            #expect(try await owner.enableSync())
            await owner.close()
            let device = try await PostgresStore(configuration: Self.configuration(role), name: name, connections: 1)
            try await device.write(Record(id: "w", data: Note(text: "written by the device's role")))
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("locallmdb-grant-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            let local = try LocalDatabase(directory: directory)
            try await local.write(Record(id: "p", data: Note(text: "pushed by the device's role")))
            let synchronizer = Synchronizer(local, with: device, device: "phone")
            try await synchronizer.synchronize()
            let pushed: Note? = try await device.read(id: "p")
            #expect(pushed?.text == "pushed by the device's role")
            let received: Note? = try await local.read(id: "w")
            #expect(received?.text == "written by the device's role")
            await local.close()
            await device.close()
        }

        @Test("A device opens its user's store and nothing else: a hostile device process reaches nothing of another user's")
        func hostileDevice() async throws {
            let helper = try replicationHelper()
            let alice = try await Self.makeRole("alice")
            let bob = try await Self.makeRole("bob")
            let aliceStore = PostgresServer.uniqueStore("alice")
            let bobStore = PostgresServer.uniqueStore("bob")
            let logger = Logger(label: "tests")
            // As before the first store is provisioned: no policy, no row-level security.
            _ = try await PostgresServer.withConnection { admin in
                try await admin.query("DROP POLICY IF EXISTS locallmdb_granted_stores ON locallmdb_stores", logger: logger)
                try await admin.query("ALTER TABLE locallmdb_stores DISABLE ROW LEVEL SECURITY", logger: logger)
            }
            // Alice, before anything is provisioned, leaves a table and a policy of the same names
            // in a session of hers (temporary, seen in the catalog by everyone), for the owner's
            // provisioning to mistake for its own.
            let spoof = try await PostgresConnection.connect(configuration: Self.configuration(alice), id: 9, logger: logger)
            try await spoof.query("CREATE TEMP TABLE locallmdb_stores (prefix text, access_role text)", logger: logger)
            try await spoof.query("CREATE POLICY locallmdb_granted_stores ON pg_temp.locallmdb_stores USING (true)", logger: logger)
            try await PostgresStore.provision(aliceStore, for: alice.name, configuration: PostgresServer.configuration())
            try await spoof.close()
            try await PostgresServer.withConnection { admin in
                let rows = try await admin.query("""
                    SELECT relrowsecurity, (SELECT count(*) FROM pg_policy WHERE polrelid = c.oid) FROM pg_class c WHERE c.oid = 'locallmdb_stores'::regclass
                    """, logger: logger)
                for try await (secured, policies) in rows.decode((Bool, Int).self) {
                    #expect(secured && policies == 1)
                }
            }
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
            #expect(outcomes["found-group"] == "yes")
            #expect(outcomes["see-row"] == "rows 0")
            #expect(outcomes["see-rows"] == "rows 1")
            #expect(outcomes["update-row"] == "rows 0")
            #expect(outcomes["delete-row"] == "refused 42501")
            for attempt in [
                "read-records", "read-log", "read-classes", "read-entries", "take-row", "write-sequencer", "write-records", "delete-log",
                "drop-table", "alter-table", "take-ticks", "join-role", "become-role", "drop-policy", "disable-security", "create-table",
            ] {
                #expect(outcomes[attempt] == "refused 42501", "\(attempt): \(outcomes[attempt] ?? "no line")")
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

        @Test("Provisioning for a role that may create tables in the stores' schema is refused before any table is made")
        func aRoleThatMayCreateTablesIsRefused() async throws {
            let mallory = try await Self.makeRole("mallory")
            let logger = Logger(label: "tests")
            let quoted = try await PostgresServer.withConnection { admin in
                let rows = try await admin.query("SELECT format('%I', \(mallory.name))", logger: logger)
                for try await name in rows.decode(String.self) { return name }
                return ""
            }
            _ = try await PostgresServer.withConnection { admin in
                try await admin.query(PostgresQuery(unsafeSQL: "GRANT CREATE ON SCHEMA public TO \(quoted)"), logger: logger)
            }
            let store = PostgresServer.uniqueStore()
            do {
                try await PostgresStore.provision(store, for: mallory.name, configuration: PostgresServer.configuration())
                Issue.record("a store was provisioned for a role that may create tables")
            } catch let error as LocalDatabaseError {
                guard case let .server(_, message) = error else { throw error }
                #expect(message.contains("may create tables"))
            }
            // Nothing was made.
            try await PostgresServer.withConnection { admin in
                let rows = try await admin.query(
                    "SELECT count(*) FROM pg_class WHERE relname LIKE \(PostgresStore.tablePrefix(of: store) + "%")", logger: logger)
                for try await count in rows.decode(Int.self) { #expect(count == 0) }
                try await admin.query(PostgresQuery(unsafeSQL: "REVOKE CREATE ON SCHEMA public FROM \(quoted)"), logger: logger)
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

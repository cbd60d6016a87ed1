import LocalLMDBLMDB
import PostgresNIO

/// Which PostgreSQL roles may open a store: each user's devices connect with a role of their own,
/// and reach their user's store and nothing else of the server's.
///
/// A store is one user's when it is provisioned for that user's role (`grant`): the store's owner
/// (the role that made its tables) makes a group role named as the store's tables' prefix, gives
/// it the rows of the store's tables to read and write (never their definitions), the store's
/// sequence of ticks, and its own row of `locallmdb_stores`, and makes the user's role a member.
/// Row-level security on `locallmdb_stores` shows a role only the rows of the stores whose group
/// role it is a member of (the policy is bound when it is made, so no table or view a role makes
/// can stand in for the catalog it reads), and the columns such a role may change are the row's
/// state: its index catalog version, schema version and migrations, never
/// its name, prefix or log id. A role can create no table (PostgreSQL 15 and later give `PUBLIC`
/// no `CREATE` on the `public` schema), so it opens only stores provisioned for it: creating one,
/// or migrating one to a newer schema version, is the owner's (provisioning again migrates).
///
/// What a role can still do to other stores: see that they exist (their tables' names, digests of
/// the stores' names, are in the catalog), and take the advisory locks their writers and
/// sequencer take (PostgreSQL has no privilege on advisory lock keys), which delays their writes
/// up to their busy timeout: a denial of service, never a read or a change.
enum StoreAccess {
    /// The name of the policy on `locallmdb_stores`.
    static let policy = "locallmdb_granted_stores"

    /// Lets `role` open the store `schema`, run by its owner on `connection` in one transaction.
    /// - Throws: `server` naming the role when there is no such role (or the server refuses).
    static func grant(
        _ schema: StoreSchema, to role: String, on connection: PostgresConnection, logger: Logger, within limit: Duration
    ) async throws(DatabaseError) {
        try await inTransaction("granting the store", on: connection, logger: logger, within: limit) { (run: Run) async throws(DatabaseError) in
            try await checkRole(role, run)
            let group = schema.prefix
            let exists = try await run(PostgresQuery(unsafeSQL: "SELECT 1 FROM pg_roles WHERE rolname = $1", binds: binds(group)))
            if exists.rows.first == nil {
                _ = try await run(PostgresQuery(unsafeSQL: "CREATE ROLE \(group) NOLOGIN"))
            }
            let policies = try await run(PostgresQuery(
                unsafeSQL: "SELECT 1 FROM pg_policies WHERE tablename = 'locallmdb_stores' AND policyname = $1", binds: binds(policy)))
            if policies.rows.first == nil {
                _ = try await run("ALTER TABLE locallmdb_stores ENABLE ROW LEVEL SECURITY")
                _ = try await run(PostgresQuery(unsafeSQL: """
                    CREATE POLICY \(policy) ON locallmdb_stores
                    USING (CASE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_roles r WHERE r.rolname = prefix)
                        THEN pg_catalog.pg_has_role(prefix, 'MEMBER') ELSE false END)
                    """))
            }
            for statement in [
                "GRANT SELECT, UPDATE (index_version, version, migrations) ON locallmdb_stores TO \(group)",
                "GRANT SELECT, INSERT, UPDATE, DELETE ON \(schema.records), \(schema.classes), \(schema.log), \(schema.replication), \(schema.indexes), \(schema.entries) TO \(group)",
                "GRANT SELECT, UPDATE ON \(schema.sequencer) TO \(group)",
                "GRANT USAGE ON SEQUENCE \(schema.ticks) TO \(group)",
            ] {
                _ = try await run(PostgresQuery(unsafeSQL: statement))
            }
            // The role's name quoted by the server (`%I`): any name a role has, never part of the text.
            _ = try await run(try await quoted("GRANT \(group) TO %I", role, run))
        }
    }

    /// Takes back from `role` the store `schema` (`grant`'s membership), run by its owner.
    static func revoke(
        _ schema: StoreSchema, from role: String, on connection: PostgresConnection, logger: Logger, within limit: Duration
    ) async throws(DatabaseError) {
        try await inTransaction("revoking the store", on: connection, logger: logger, within: limit) { (run: Run) async throws(DatabaseError) in
            try await checkRole(role, run)
            let exists = try await run(PostgresQuery(unsafeSQL: "SELECT 1 FROM pg_roles WHERE rolname = $1", binds: binds(schema.prefix)))
            if exists.rows.first != nil {
                _ = try await run(try await quoted("REVOKE \(schema.prefix) FROM %I", role, run))
            }
        }
    }

    private typealias Run = (PostgresQuery) async throws(DatabaseError) -> PostgresQueryResult

    /// `body` in a transaction on `connection` that holds the stores' creation lock (`StoreSchema.open`'s).
    private static func inTransaction(
        _ operation: String, on connection: PostgresConnection, logger: Logger, within limit: Duration, _ body: (Run) async throws(DatabaseError) -> Void
    ) async throws(DatabaseError) {
        let run: Run = { (query: PostgresQuery) async throws(DatabaseError) -> PostgresQueryResult in
            try await connection.send(query, logger: logger, within: limit).value(operation)
        }
        _ = try await run(StoreSchema.beginWrite)
        do throws(DatabaseError) {
            _ = try await run("SELECT pg_advisory_xact_lock(7236051267330040897)")
            try await body(run)
            let committed = try await run("COMMIT")
            guard committed.metadata.command == "COMMIT" else {
                throw .transactionFailed(reason: "the server rolled \(operation) back")
            }
        } catch {
            _ = try? await run("ROLLBACK")
            throw error
        }
    }

    /// Throws when there is no role `role`.
    private static func checkRole(_ role: String, _ run: Run) async throws(DatabaseError) {
        guard !role.utf8.contains(0), try await run(PostgresQuery(unsafeSQL: "SELECT 1 FROM pg_roles WHERE rolname = $1", binds: binds(role))).rows.first != nil
        else {
            throw .server(operation: "granting a store", message: "the server has no role named \(role.debugDescription)")
        }
    }

    /// `format`'s statement with `%I` replaced by `identifier` quoted as an identifier, by the server.
    private static func quoted(_ format: String, _ identifier: String, _ run: Run) async throws(DatabaseError) -> PostgresQuery {
        let result = try await run(PostgresQuery(unsafeSQL: "SELECT format($1, $2)", binds: binds(format, identifier)))
        guard let row = result.rows.first, let statement = try? row.decode(String.self) else {
            throw .server(operation: "granting a store", message: "the server did not quote the role's name")
        }
        return PostgresQuery(unsafeSQL: statement)
    }
}

extension PostgresEngine {
    /// Opens the store `store` with `configuration` (its owner's: creating or migrating its tables,
    /// as opening does), then lets `role` open it (`granting`) or takes it back (`StoreAccess`).
    package static func provision(
        store: String, role: String, granting: Bool, configuration: PostgresConnection.Configuration, eventLoopGroup: any EventLoopGroup
    ) async throws(DatabaseError) {
        var options = Options()
        options.connections = 1
        let engine = try await open(configuration: configuration, store: store, options: options, eventLoopGroup: eventLoopGroup)
        do throws(DatabaseError) {
            let connection = try await engine.leased("granting the store")
            do throws(DatabaseError) {
                if granting {
                    try await StoreAccess.grant(engine.schema, to: role, on: connection, logger: engine.logger, within: engine.queryTimeout)
                } else {
                    try await StoreAccess.revoke(engine.schema, from: role, on: connection, logger: engine.logger, within: engine.queryTimeout)
                }
                engine.pool.release(connection)
            } catch {
                engine.pool.release(connection, broken: connection.isClosed)
                throw error
            }
        } catch {
            await engine.close()
            throw error
        }
        await engine.close()
    }
}

extension PostgresEngine {
    /// The prefix of the tables of the store `name` (`StoreSchema.prefix(for:)`).
    package static func tablePrefix(of name: String) -> String {
        StoreSchema.prefix(for: name)
    }
}

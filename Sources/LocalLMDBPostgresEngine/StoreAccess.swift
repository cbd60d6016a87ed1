import LocalLMDBLMDB
import PostgresNIO

/// Which PostgreSQL roles may open a store: each user's devices connect with a role of their own,
/// and reach their user's store and nothing else of the server's.
///
/// A store is one user's when it is provisioned for that user's role (`grant`), by the role that
/// owns the store's tables (checked: every one of them):
/// - a group role of the store's (`locallmdb_store_` and 16 hexadecimal digits of a digest of the
///   database, the schema and the store's prefix, so stores of the same name in other databases
///   or schemas of the cluster have other groups; marked by a comment, and a role of that name
///   not so marked is refused) gets the rows of the store's tables to read and write, never their
///   definitions, and its sequence of ticks; the user's role becomes its member;
/// - one role per database and schema (`locallmdb_devices_…`, marked the same way), which every
///   group role is a member of, may read `locallmdb_stores` and change a row's state (index
///   catalog version, schema version, migrations; never its name, prefix, log id or access role),
///   so the table's privileges do not grow with the number of stores;
/// - row-level security on `locallmdb_stores` shows a role only the rows whose `access_role` (the
///   group, written by `grant`) it is a member of. The policy is bound when it is made, and the
///   checks that find it and the table's security look the table up by its id, so nothing a role
///   makes (a temporary table of the same name, say) can stand in for either.
///
/// A role that may create tables in the stores' schema could prepare tables a store's owner would
/// then write into: `grant` refuses such a role (PostgreSQL 15 and later give `PUBLIC` no `CREATE`
/// on the `public` schema; a database upgraded from an earlier version keeps it until revoked).
/// A provisioned role creates no store and migrates none to a newer schema version: provisioning
/// again migrates.
///
/// What a role can still learn of, or do to, other stores: that they exist, their sizes and
/// activity (the catalog and statistics views are every role's; store names are unsalted digests,
/// so a guessed name can be confirmed), the moments of their commits (`LISTEN` on their channel,
/// where a `NOTIFY` also makes their observers look again), and the advisory locks their writers,
/// sequencer and openers take, which PostgreSQL grants no privilege on: a role holding one makes
/// those writes, or every open and provisioning in the database, fail with `busy` for as long as
/// it holds it. A denial of service, never a read or a change of another user's data.
enum StoreAccess {
    /// The name of the policy on `locallmdb_stores`.
    static let policy = "locallmdb_granted_stores"

    /// Whether `name` is a store's group role name as provisioning makes it
    /// (`locallmdb_store_` and 16 lowercase hexadecimal digits): safe to name in a statement.
    static func isGroupRoleName(_ name: String) -> Bool {
        let prefix = "locallmdb_store_"
        guard name.hasPrefix(prefix) else { return false }
        let digits = name.utf8.dropFirst(prefix.utf8.count)
        return digits.count == 16 && digits.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    /// Checks, before the store is opened (and its tables made or migrated) by their owner, that
    /// `role` exists and cannot create tables in the schema they are or will be in, and that the
    /// store's existing tables are all the owner's.
    static func preflight(
        _ prefix: String, for role: String, on connection: PostgresConnection, logger: Logger, within limit: Duration
    ) async throws(DatabaseError) {
        let run: Run = { (query: PostgresQuery) async throws(DatabaseError) -> PostgresQueryResult in
            try await connection.send(query, logger: logger, within: limit).value("granting the store")
        }
        try await checkRole(role, run)
        let creates = try await run(PostgresQuery(
            unsafeSQL: """
                SELECT has_schema_privilege($1, COALESCE((SELECT relnamespace FROM pg_class WHERE oid = to_regclass('locallmdb_stores')),
                    (SELECT oid FROM pg_namespace WHERE nspname = current_schema())), 'CREATE')
                """,
            binds: binds(role)))
        guard let row = creates.rows.first, let canCreate = try? row.decode(Bool.self) else {
            throw .server(operation: "granting a store", message: "the stores' schema was not found")
        }
        if canCreate {
            throw .server(
                operation: "granting a store",
                message: "the role \(role.debugDescription) may create tables in the stores' schema (revoke CREATE on it, from PUBLIC too, first)")
        }
        try await checkOwned(prefix, run)
    }

    /// Lets `role` open the store `schema`, run by its owner on `connection` in one transaction.
    /// - Throws: `server` naming the role when there is no such role, it may create tables in the
    ///   stores' schema, a table of the store is not the owner's, a role of the group's name is not
    ///   this store's, or the server refuses.
    static func grant(
        _ schema: StoreSchema, to role: String, on connection: PostgresConnection, logger: Logger, within limit: Duration
    ) async throws(DatabaseError) {
        try await inTransaction("granting the store", on: connection, logger: logger, within: limit) { (run: Run) async throws(DatabaseError) in
            try await checkRole(role, run)
            try await checkOwned(schema.prefix, run)
            let names = try await run(PostgresQuery(
                unsafeSQL: """
                    SELECT 'locallmdb_store_' || left(encode(sha256(place || '\\x00'::bytea || convert_to($1, 'UTF8')), 'hex'), 16),
                        'locallmdb_devices_' || left(encode(sha256(place), 'hex'), 12), location
                    FROM (SELECT convert_to(current_database(), 'UTF8') || '\\x00'::bytea || convert_to(n.nspname, 'UTF8') AS place,
                              current_database() || '.' || n.nspname AS location
                          FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = 'locallmdb_stores'::regclass) AS here
                    """,
                binds: binds(schema.prefix)))
            guard let row = names.rows.first, let (group, devices, location) = try? row.decode((String, String, String).self) else {
                throw .server(operation: "granting a store", message: "the stores' table was not found")
            }
            try await ensureRole(devices, marker: "LocalLMDB devices of \(location)", run)
            try await ensureRole(group, marker: "LocalLMDB store \(schema.prefix) of \(location)", run)
            // The row's access role, and the policy and security that read it.
            let hasColumn = try await hasAccessColumn(run)
            if !hasColumn { _ = try await run("ALTER TABLE locallmdb_stores ADD COLUMN IF NOT EXISTS access_role text") }
            let policies = try await run(PostgresQuery(
                unsafeSQL: "SELECT 1 FROM pg_policy WHERE polrelid = 'locallmdb_stores'::regclass AND polname = $1", binds: binds(policy)))
            if policies.rows.first == nil {
                _ = try await run(PostgresQuery(unsafeSQL: """
                    CREATE POLICY \(policy) ON locallmdb_stores
                    USING (CASE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_roles r WHERE r.rolname = access_role)
                        THEN pg_catalog.pg_has_role(access_role, 'MEMBER') ELSE false END)
                    """))
            }
            let secured = try await run("SELECT relrowsecurity FROM pg_class WHERE oid = 'locallmdb_stores'::regclass").rows.first
                .flatMap { try? $0.decode(Bool.self) } ?? false
            if !secured { _ = try await run("ALTER TABLE locallmdb_stores ENABLE ROW LEVEL SECURITY") }
            for statement in [
                "GRANT SELECT, UPDATE (index_version, version, migrations) ON locallmdb_stores TO \(devices)",
                "GRANT \(devices) TO \(group)",
                "GRANT SELECT, INSERT, UPDATE, DELETE ON \(schema.records), \(schema.classes), \(schema.log), \(schema.replication), \(schema.indexes), \(schema.entries) TO \(group)",
                "GRANT SELECT, UPDATE ON \(schema.sequencer) TO \(group)",
                "GRANT USAGE ON SEQUENCE \(schema.ticks) TO \(group)",
            ] {
                _ = try await run(PostgresQuery(unsafeSQL: statement))
            }
            // Synchronization's tables and trigger, made under the exclusive writers' lock (a write in
            // flight ends first, so every later one is stamped), and the group's rows of them.
            _ = try await run(schema.writersLock(.exclusive))
            let sync = SyncSchema(schema: schema)
            for statement in sync.creation + sync.grants(to: group) { _ = try await run(PostgresQuery(unsafeSQL: statement)) }
            // The push procedure, unless the store has one (made by its owner's `enableSync`).
            if try await run(sync.pushProcedureExistsQuery).rows.first.flatMap({ try? $0.decode(Bool.self) }) != true {
                _ = try await run(sync.createPushProcedure)
            }
            _ = try await run(sync.dropEarlierPushProcedure)
            _ = try await run(PostgresQuery(
                unsafeSQL: "UPDATE locallmdb_stores SET access_role = $1 WHERE name = $2", binds: binds(group, schema.nameBytes)))
            // The role's name quoted by the server (`%I`): any name a role has, never part of the text.
            _ = try await run(try await quoted("GRANT \(group) TO %I", role, run))
        }
    }

    /// Takes back from `role` the store `schema` (`grant`'s membership), run by its owner; checks
    /// that the role is no longer a member (a membership another role granted stays: an error).
    static func revoke(
        _ schema: StoreSchema, from role: String, on connection: PostgresConnection, logger: Logger, within limit: Duration
    ) async throws(DatabaseError) {
        try await inTransaction("revoking the store", on: connection, logger: logger, within: limit) { (run: Run) async throws(DatabaseError) in
            try await checkRole(role, run)
            let hasColumn = try await hasAccessColumn(run)
            guard hasColumn else { return }
            let found = try await run(PostgresQuery(
                unsafeSQL: "SELECT access_role FROM locallmdb_stores WHERE name = $1 AND access_role IS NOT NULL", binds: binds(schema.nameBytes)))
            guard let group = found.rows.first.flatMap({ try? $0.decode(String.self) }) else { return }
            _ = try await run(try await quoted("REVOKE \(group) FROM %I", role, run))
            let member = try await run(PostgresQuery(unsafeSQL: "SELECT pg_has_role($1, $2, 'MEMBER')", binds: binds(role, group)))
            if member.rows.first.flatMap({ try? $0.decode(Bool.self) }) ?? true {
                throw .server(
                    operation: "revoking a store",
                    message: "the role \(role.debugDescription) is still a member of \(group) (a membership another role granted)")
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

    /// Whether `locallmdb_stores` has its `access_role` column (added by the first `grant`).
    private static func hasAccessColumn(_ run: Run) async throws(DatabaseError) -> Bool {
        try await run("""
            SELECT 1 FROM pg_attribute WHERE attrelid = 'locallmdb_stores'::regclass AND attname = 'access_role' AND NOT attisdropped
            """).rows.first != nil
    }

    /// Throws when a table or sequence of the store `prefix` that exists is not the current role's.
    private static func checkOwned(_ prefix: String, _ run: Run) async throws(DatabaseError) {
        let relations = ["records", "classes", "log", "replication", "indexes", "entries", "sequencer", "ticks"].map { "\(prefix)_\($0)" }
        let result = try await run(PostgresQuery(
            unsafeSQL: """
                SELECT c.relname FROM pg_class c
                WHERE c.oid = ANY (SELECT to_regclass(name) FROM unnest($1::text[]) AS name) AND c.relowner <> (SELECT oid FROM pg_roles WHERE rolname = current_user)
                """,
            binds: binds(relations)))
        if let row = result.rows.first, let name = try? row.decode(String.self) {
            throw .server(operation: "granting a store", message: "the store's \(name) belongs to another role than the one granting it")
        }
    }

    /// Makes the role `name` (no login), marked by the comment `marker`; an existing one must carry it.
    private static func ensureRole(_ name: String, marker: String, _ run: Run) async throws(DatabaseError) {
        let found = try await run(PostgresQuery(
            unsafeSQL: "SELECT COALESCE(shobj_description(oid, 'pg_authid'), '') FROM pg_roles WHERE rolname = $1", binds: binds(name)))
        if let row = found.rows.first {
            guard (try? row.decode(String.self)) == marker else {
                throw .server(operation: "granting a store", message: "a role named \(name) exists and is not \(marker.debugDescription)")
            }
            return
        }
        _ = try await run(PostgresQuery(unsafeSQL: "CREATE ROLE \(name) NOLOGIN"))
        _ = try await run(try await quoted("COMMENT ON ROLE \(name) IS %L", marker, run))
    }

    /// Throws when there is no role `role`.
    private static func checkRole(_ role: String, _ run: Run) async throws(DatabaseError) {
        guard !role.utf8.contains(0), try await run(PostgresQuery(unsafeSQL: "SELECT 1 FROM pg_roles WHERE rolname = $1", binds: binds(role))).rows.first != nil
        else {
            throw .server(operation: "granting a store", message: "the server has no role named \(role.debugDescription)")
        }
    }

    /// `format`'s statement with its one `%I` or `%L` replaced by `identifier` quoted (as an
    /// identifier or a literal) by the server.
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
        if granting {
            // Before the store's tables are made or written (by their owner): a role that could
            // have prepared them is refused first.
            let connection = try await ServerCall.run("connecting") {
                try await PostgresConnection.connect(on: eventLoopGroup.any(), configuration: configuration, id: 0, logger: options.logger).get()
            }
            do throws(DatabaseError) {
                try await StoreAccess.preflight(StoreSchema.prefix(for: store), for: role, on: connection, logger: options.logger, within: options.queryTimeout)
            } catch {
                _ = try? await connection.close().get()
                throw error
            }
            _ = try? await connection.close().get()
        }
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

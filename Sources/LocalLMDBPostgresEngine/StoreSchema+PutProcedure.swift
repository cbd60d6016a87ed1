import LocalLMDBLMDB
import PostgresNIO

/// The store's put procedure (`<prefix>_put2`): a write of records by key, made in one `CALL`
/// (one round trip) when nothing about it needs the client to look first
/// (`PostgresEngine.fastPut` from the engine's thread, `putFromTask` from a writer's task). It
/// makes the checks and writes a transaction of `commitGroup` makes, in the same order, in fewer
/// statements, each with its own snapshot (a PL/pgSQL routine's statements take one each under
/// read committed):
///
/// 1. the writers' lock, shared (`WritersLock.shared`);
/// 2. in one statement, the store's row (its index catalog's version must be the one the client
///    holds, a catalog with no index: no entries to write; its schema version one this library
///    writes; its migration entry the one the client checked the write against) and the class
///    rows the write claims, each as the client last read it (its claim then records nothing:
///    `StoredClass.claim(over:)` of the same rows);
/// 3. the records, in one upsert: new keys inserted, taken ones locked in key order, then
///    replaced when they stay in their class;
/// 4. the change log's entry, encoded by the client; then it commits, and notifies the store's
///    channel in a transaction of its own, committed without waiting for its flush
///    (`synchronous_commit` off for it alone: it stores nothing, and the write it announces was
///    flushed before). A transaction that notifies holds the server's notification lock, one for
///    the whole database, until its commit ends: notifying in the write's transaction, or in one
///    that waits for its flush, made concurrent writers wait for each other's flushes.
///
/// Anything unexpected (2 changed, or a record moving to another class, whose log entry the
/// client did not write) raises SQLSTATE `LL001`: nothing is kept, and the client writes through
/// `commitGroup`, which reads everything again.
///
/// The procedure is created by any open whose role may create in the schema when the store lacks
/// it; it runs with its caller's rights. A store without it is written through `commitGroup`.
extension StoreSchema {
    /// The procedure's name.
    var putProcedure: String { prefix + "_put2" }

    /// The SQLSTATE the procedure raises when the client must write the general way.
    static let putFallbackState = "LL001"

    /// The SQLSTATE the put and push procedures raise when they cannot serve this connection at
    /// all (its transactions are not read committed): the general way from then on.
    static let procedureUnusableState = "LL002"

    /// The log's numbering function (`LogSequencer.createFunction`).
    var numberFunction: String { prefix + "_number1" }

    /// The change feed's function (`LogSequencer.createFeedFunction`).
    var feedFunction: String { prefix + "_feed1" }

    /// The SQLSTATE the numbering function raises when a batch was not numbered whole.
    static let numberingFailedState = "LL003"

    /// The statement that says whether the procedure exists.
    var putProcedureExistsQuery: PostgresQuery {
        PostgresQuery(unsafeSQL: "SELECT to_regprocedure($1) IS NOT NULL", binds: binds(putProcedure + Self.putSignature))
    }

    /// The procedure's parameter types.
    static let putSignature = "(bytea, bigint, boolean, bytea, bytea[], bytea[], bytea[], bytea[], bytea[], bytea[], bytea, text)"

    /// Creates the procedure when the store lacks it and the role may create in the schema (not
    /// a schema version: without it, writes take the general way). Returns whether the store has
    /// it then (nil: the answer could not be read).
    func addPutProcedure(_ run: (PostgresQuery) async throws -> PostgresQueryResult) async throws -> Bool? {
        guard let (exists, mayCreate) = Self.existsAndMayCreate(try await run(Self.routineQuery(putProcedure + Self.putSignature))) else { return nil }
        guard !exists, mayCreate else { return exists }
        _ = try await run(createPutProcedure)
        // The earlier version's, which notified in a transaction that waited for its flush, when
        // this role owns it (a process of that version then finds it gone and writes the general
        // way); another role's is left for its owner's next open.
        let owned = try await run(PostgresQuery(
            unsafeSQL: "SELECT EXISTS (SELECT 1 FROM pg_proc WHERE oid = to_regprocedure($1) AND pg_has_role(proowner, 'USAGE'))",
            binds: binds(prefix + "_put1" + Self.putSignature))).rows.first.flatMap { try? $0.decode(Bool.self) } ?? false
        if owned { _ = try await run(PostgresQuery(unsafeSQL: "DROP PROCEDURE IF EXISTS \(prefix)_put1\(Self.putSignature)")) }
        return true
    }

    /// Creates the log's numbering and feed functions when the store lacks them and the role may
    /// create in the schema (without them, the log is numbered in five statements, then read). Returns whether the store
    /// has it then (nil: the answer could not be read).
    func addNumberFunction(_ run: (PostgresQuery) async throws -> PostgresQueryResult) async throws -> Bool? {
        guard let (exists, mayCreate) = Self.existsAndMayCreate(try await run(Self.routineQuery(feedFunction + "(bigint, bigint)"))) else { return nil }
        guard !exists, mayCreate else { return exists }
        _ = try await run(LogSequencer.createFunction(self))
        _ = try await run(LogSequencer.createFeedFunction(self))
        return true
    }

    /// The statement that creates (or replaces) the procedure.
    var createPutProcedure: PostgresQuery {
        PostgresQuery(
            unsafeSQL: """
                CREATE OR REPLACE PROCEDURE \(putProcedure)(
                    p_store bytea, p_index_version bigint, p_migrated boolean, p_migrations bytea,
                    p_class_keys bytea[], p_class_rows bytea[],
                    p_keys bytea[], p_record_class_keys bytea[], p_names bytea[], p_values bytea[],
                    p_entry bytea, p_channel text
                ) LANGUAGE plpgsql AS $put$
                DECLARE
                    stored bigint;
                BEGIN
                    \(procedureReadCommitted)
                    PERFORM pg_advisory_xact_lock_shared(\(lockKey));
                    -- One statement, one snapshot: the store's row and the claimed class rows.
                    IF NOT \(procedureStoreUnchanged)
                        OR (SELECT count(*) FROM \(classes) c JOIN unnest(p_class_keys, p_class_rows) AS e(k, r) ON c.name_key = e.k AND c.row = e.r)
                        <> coalesce(cardinality(p_class_keys), 0) THEN
                        RAISE EXCEPTION 'the store or a class row changed since the writer read it' USING ERRCODE = '\(Self.putFallbackState)';
                    END IF;
                \(procedureRecordsUpsert)
                \(procedureCommitAndNotify)
                END
                $put$
                """)
    }
}

// The parts the put and push procedures share (`SyncSchema.createPushProcedure`): each rule in
// one place. They name the procedures' parameters.
extension StoreSchema {
    /// The statement that says whether the routine `signature` (its name and parameter types)
    /// exists, and whether this role may create routines in the schema (`existsAndMayCreate`).
    static func routineQuery(_ signature: String) -> PostgresQuery {
        PostgresQuery(
            unsafeSQL: "SELECT to_regprocedure($1) IS NOT NULL, coalesce(has_schema_privilege(current_schema(), 'CREATE'), false)",
            binds: binds(signature))
    }

    /// What `routineQuery` read; nil when it cannot be read.
    static func existsAndMayCreate(_ result: PostgresQueryResult) -> (exists: Bool, mayCreate: Bool)? {
        try? result.rows.first?.decode((Bool, Bool).self)
    }

    /// Refuses a call in a transaction that is not read committed (a server or role whose default
    /// is another level): its statements would share the snapshot taken before the writers'
    /// lock was granted, and miss an index defined meanwhile. (`begin` names the level itself.)
    var procedureReadCommitted: String {
        """
        IF current_setting('transaction_isolation') <> 'read committed' THEN
                                RAISE EXCEPTION 'the transaction is not read committed' USING ERRCODE = '\(Self.procedureUnusableState)';
                            END IF;
        """
    }

    /// The writers' lock's key, as the advisory lock functions' two arguments.
    var lockKey: String { "\(0x4C4D_4442 as Int32), \(Int32(truncatingIfNeeded: migrationLockKey))" }

    /// True when the store's row is as the client read it (`p_store`, `p_index_version`,
    /// `p_migrated`, `p_migrations`): its index catalog's version (a catalog with no index), a
    /// schema version this library writes, and its migration entry.
    var procedureStoreUnchanged: String {
        """
        EXISTS (
                            SELECT 1 FROM locallmdb_stores WHERE name = p_store AND index_version = p_index_version
                                AND version <= \(Self.migratedVersion)
                                AND ((NOT p_migrated AND migrations IS NULL) OR (p_migrated AND migrations = p_migrations)))
        """
    }

    /// Writes the records (`p_keys`, `p_record_class_keys`, `p_names`, `p_values`), refusing the
    /// call (`putFallbackState`) when one moves to another class.
    var procedureRecordsUpsert: String {
        """
                            -- New keys go in; a taken key is locked (in key order) and replaced as it is once
                            -- locked (its latest version), unless it is of another class: that row is left
                            -- out of the count, and the whole write refused. A taken key deleted by another
                            -- writer meanwhile is inserted again. (The keys are distinct: `RecordRows`.)
                            WITH written AS (
                                INSERT INTO \(records) AS r (key, class_key, class_name, value)
                                SELECT * FROM unnest(p_keys, p_record_class_keys, p_names, p_values) AS t(key, class_key, class_name, value) ORDER BY key
                                ON CONFLICT (key) DO UPDATE SET class_key = EXCLUDED.class_key, value = EXCLUDED.value
                                    WHERE r.class_name = EXCLUDED.class_name
                                RETURNING 1)
                            SELECT count(*) INTO stored FROM written;
                            IF stored <> coalesce(cardinality(p_keys), 0) THEN
                                RAISE EXCEPTION 'a record moves to another class' USING ERRCODE = '\(Self.putFallbackState)';
                            END IF;
        """
    }

    /// Appends the log's entry (`p_entry`), commits, and notifies the store's channel
    /// (`p_channel`) in a transaction of its own.
    var procedureCommitAndNotify: String {
        """
                            INSERT INTO \(log) (changes) VALUES (p_entry);
                            COMMIT;
                            -- The notification's transaction waits neither for the disk nor past the busy
                            -- timeout for the server's notification lock (held only briefly by others'):
                            -- no error of its commit, made once the records were, can be taken for a
                            -- refusal of the write.
                            PERFORM set_config('synchronous_commit', 'off', true);
                            PERFORM set_config('lock_timeout', '0', true);
                            PERFORM pg_notify(p_channel, '');
        """
    }
}

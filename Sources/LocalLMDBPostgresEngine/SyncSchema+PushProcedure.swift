import LocalLMDBLMDB
import PostgresNIO

/// The store's push procedure (`<prefix>_push2`): a device's push made in one `CALL` (one round
/// trip) when every write in it simply replaces its record's version (`PostgresEngine.fastPush`):
/// a put, of a later time than the version the server holds, made having seen that version (its
/// base), or over the device's own version, or over none. It makes the checks and writes a push
/// of `pushSync` makes, in the same order:
///
/// 1. the writers' lock, shared (`WritersLock`), with the transaction marked as a push (the
///    trigger stamps nothing: the push stamps its writes itself);
/// 2. the store's row, as the client read it (`StoreSchema.procedureStoreUnchanged`);
/// 3. every key's stamp row, made when missing, locked in key order and read as it is once
///    locked; each must be one the write replaces as above, else nothing is kept;
/// 4. the records (`StoreSchema.procedureRecordsUpsert`), then the stamps, then the log's entry,
///    encoded by the client; it commits and notifies as the put procedure does.
///
/// Anything else (a write that loses, ties, or replaces a version it did not see: a conflict to
/// log; a deletion, whose log entry names the class the server held; a class to record) raises
/// SQLSTATE `LL001`, and `pushSync` pushes the general way, which decides and logs it.
///
/// Made with the synchronization tables, and by a later `enableSync` of a role that may create in
/// the schema when the store lacks it; it runs with its caller's rights.
///
/// Its statements find rows by their keys whatever their plans: PL/pgSQL keeps a statement's
/// generic plan for the session, and one made while the store's tables were small (a new store
/// is never analyzed for its first minute or so) scans a table where it joins one with the
/// arguments, and keeps scanning it as it grows. So stamps are set by `INSERT … ON CONFLICT`
/// (its rows found through the key's index), never by an `UPDATE … FROM unnest(…)`: the earlier
/// version, `<prefix>_push1`, did that, and its every push read every stamp row of the store
/// (0.4 ms a push at 8,000 rows, growing with the store); `addPushProcedure` and provisioning
/// replace it.
extension SyncSchema {
    /// The procedure's name.
    var pushProcedure: String { schema.prefix + "_push2" }

    /// The procedure's parameter types.
    static let pushSignature = "(bytea, bigint, boolean, bytea, text, bytea[], bytea[], bigint[], bigint[], text[], bytea[], bytea[], bytea[], bytea, text)"

    /// The statement that says whether the procedure exists.
    var pushProcedureExistsQuery: PostgresQuery {
        PostgresQuery(unsafeSQL: "SELECT to_regprocedure($1) IS NOT NULL", binds: binds(pushProcedure + Self.pushSignature))
    }

    /// The earlier version's name (`<prefix>_push1`, same parameters), whose stamps' update
    /// could scan the store's stamp rows on every push.
    var earlierPushProcedure: String { schema.prefix + "_push1" }

    /// Creates the procedure when the store lacks it and the role may create in the schema; then
    /// drops the earlier version when this role owns it (`dropEarlierPushProcedure`).
    func addPushProcedure(_ run: (PostgresQuery) throws(DatabaseError) -> PostgresQueryResult) throws(DatabaseError) {
        guard let (exists, mayCreate) = StoreSchema.existsAndMayCreate(try run(StoreSchema.routineQuery(pushProcedure + Self.pushSignature))) else { return }
        if !exists {
            guard mayCreate else { return }
            _ = try run(createPushProcedure)
        }
        _ = try run(dropEarlierPushProcedure)
    }

    /// The statement that drops the earlier version of the procedure (`earlierPushProcedure`)
    /// when the store has it and this role owns it: a process of that version then finds it gone
    /// and pushes the general way. Another role's is left for its owner's next `enableSync` (or
    /// provisioning), which drops it whoever made it meanwhile.
    var dropEarlierPushProcedure: PostgresQuery {
        let procedure = earlierPushProcedure + Self.pushSignature
        // The name is the store's prefix (letters, digits and underscores) and a fixed text.
        return PostgresQuery(
            unsafeSQL: """
                DO $drop$ BEGIN
                    IF EXISTS (SELECT 1 FROM pg_proc WHERE oid = to_regprocedure('\(procedure)') AND pg_has_role(proowner, 'USAGE')) THEN
                        DROP PROCEDURE \(procedure);
                    END IF;
                END $drop$
                """)
    }

    /// The statement that creates (or replaces) the procedure.
    var createPushProcedure: PostgresQuery {
        PostgresQuery(
            unsafeSQL: """
                CREATE OR REPLACE PROCEDURE \(pushProcedure)(
                    p_store bytea, p_index_version bigint, p_migrated boolean, p_migrations bytea, p_device text,
                    p_keys bytea[], p_ids bytea[], p_times bigint[], p_base_times bigint[], p_base_devices text[],
                    p_record_class_keys bytea[], p_names bytea[], p_values bytea[],
                    p_entry bytea, p_channel text
                ) LANGUAGE plpgsql AS $push$
                DECLARE
                    replaced bigint;
                    stored bigint;
                BEGIN
                    \(schema.procedureReadCommitted)
                    PERFORM pg_advisory_xact_lock_shared(\(schema.lockKey)), set_config('locallmdb.synchronizing', 'on', true);
                    IF NOT \(schema.procedureStoreUnchanged) THEN
                        RAISE EXCEPTION 'the store changed since the device read it' USING ERRCODE = '\(StoreSchema.putFallbackState)';
                    END IF;
                    -- Every key's stamp row (stamp 0: never written), locked in key order and read
                    -- as it is once locked; each write must replace it by a later time, over the
                    -- version it saw, the device's own, or none.
                    WITH locked AS (
                        INSERT INTO \(sync) AS s (key, stamp, device, deleted) SELECT k, 0, '', true FROM unnest(p_keys) AS k ORDER BY k
                        ON CONFLICT (key) DO UPDATE SET key = s.key
                        RETURNING s.key, s.stamp, s.device)
                    SELECT count(*) INTO replaced
                        FROM locked l JOIN unnest(p_keys, p_times, p_base_times, p_base_devices) AS w(key, t, bt, bd) ON w.key = l.key
                        WHERE l.stamp >= 0 AND w.t > l.stamp
                            AND (l.stamp = 0 OR (l.stamp = w.bt AND l.device = w.bd) OR l.device = p_device);
                    IF replaced <> coalesce(cardinality(p_keys), 0) THEN
                        RAISE EXCEPTION 'a write does not simply replace its record''s version' USING ERRCODE = '\(StoreSchema.putFallbackState)';
                    END IF;
                \(schema.procedureRecordsUpsert)
                    -- Every row is there (made above): each "insert" updates its row, found through
                    -- the key's index whatever the plan (a join with the table could be planned as
                    -- a scan of it, and kept for the session).
                    INSERT INTO \(sync) AS s (key, stamp, device, deleted, id) SELECT k, t, p_device, false, i FROM unnest(p_keys, p_times, p_ids) AS v(k, t, i)
                        ON CONFLICT (key) DO UPDATE SET stamp = EXCLUDED.stamp, device = EXCLUDED.device, deleted = false, id = EXCLUDED.id;
                \(schema.procedureCommitAndNotify)
                END
                $push$
                """)
    }
}

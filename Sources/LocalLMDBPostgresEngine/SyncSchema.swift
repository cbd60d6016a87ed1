import LocalLMDBStore
import PostgresNIO

/// The tables a store synchronizes devices with, beside `StoreSchema`'s (made once, by the
/// store's owner: `PostgresStore.enableSync` or provisioning):
///
/// - `<prefix>_sync (key bytea primary key, stamp bigint, device text, deleted boolean, id bytea)`:
///   each record's stamp (`SyncStamp`: the hybrid-logical-clock time and the device of its last
///   write), and whether that write deleted it (a tombstone: kept, so that an older write never
///   brings the record back). `id` is the record's id when a device wrote it (a server write's
///   tombstone under a digest key leaves it null).
/// - `<prefix>_conflicts (number bigserial, …)`: every version that lost to a concurrent write:
///   a device's push that came too late, or the server's version a later push replaced without
///   having seen it. Both versions' stamps, the loser's stored value, when.
/// - a row trigger on `<prefix>_records` that stamps every write made on the server directly
///   (`device` empty, the server's clock), so devices receive those too; a synchronizer's push
///   turns it off for its own transaction (`locallmdb.synchronizing`) and stamps its writes itself.
///
/// Invariant: every record of the store has a row in `<prefix>_sync`, whose stamp is that of its
/// last write; a deleted record's row says so. Stamps of one key only grow.
struct SyncSchema {
    let schema: StoreSchema

    var sync: String { schema.prefix + "_sync" }
    var conflicts: String { schema.prefix + "_conflicts" }
    var trigger: String { schema.prefix + "_stamp" }

    /// The server's clock as a stamp time (milliseconds shifted by 16 bits).
    static let nowStamp = "((floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) << 16)"

    /// The statements that make the tables and the trigger, and stamp the records stored before
    /// (all of them idempotent).
    var creation: [String] {
        [
            """
            CREATE TABLE IF NOT EXISTS \(sync) (key bytea PRIMARY KEY, stamp bigint NOT NULL, device text NOT NULL,
                deleted boolean NOT NULL, id bytea)
            """,
            """
            CREATE TABLE IF NOT EXISTS \(conflicts) (number bigserial PRIMARY KEY, key bytea NOT NULL, id bytea, class_name bytea,
                value bytea, loser_stamp bigint NOT NULL, loser_device text NOT NULL, loser_deleted boolean NOT NULL,
                winner_stamp bigint NOT NULL, winner_device text NOT NULL, winner_deleted boolean NOT NULL,
                found_at timestamptz NOT NULL DEFAULT now())
            """,
            """
            CREATE OR REPLACE FUNCTION \(trigger)() RETURNS trigger LANGUAGE plpgsql AS $stamp$
            DECLARE
                k bytea;
            BEGIN
                IF coalesce(current_setting('locallmdb.synchronizing', true), '') = 'on' THEN RETURN NULL; END IF;
                IF TG_OP = 'DELETE' THEN k := OLD.key; ELSE k := NEW.key; END IF;
                INSERT INTO \(sync) AS s (key, stamp, device, deleted) VALUES (k, \(Self.nowStamp), '', TG_OP = 'DELETE')
                ON CONFLICT (key) DO UPDATE SET stamp = greatest(EXCLUDED.stamp, s.stamp + 1), device = '', deleted = EXCLUDED.deleted;
                RETURN NULL;
            END
            $stamp$
            """,
            "DROP TRIGGER IF EXISTS \(trigger) ON \(schema.records)",
            "CREATE TRIGGER \(trigger) AFTER INSERT OR UPDATE OR DELETE ON \(schema.records) FOR EACH ROW EXECUTE FUNCTION \(trigger)()",
            """
            INSERT INTO \(sync) (key, stamp, device, deleted) SELECT key, \(Self.nowStamp), '', false FROM \(schema.records)
            ON CONFLICT (key) DO NOTHING
            """,
        ]
    }

    /// The grants a store's group role needs to synchronize (`StoreAccess.grant`).
    func grants(to group: String) -> [String] {
        [
            "GRANT SELECT, INSERT, UPDATE ON \(sync) TO \(group)",
            "GRANT SELECT, INSERT ON \(conflicts) TO \(group)",
            "GRANT USAGE ON SEQUENCE \(conflicts)_number_seq TO \(group)",
        ]
    }

    /// Whether the store has its synchronization tables and trigger.
    var existsQuery: PostgresQuery {
        PostgresQuery(
            unsafeSQL: """
                SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL
                    AND EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = $3 AND tgrelid = to_regclass($4))
                """,
            binds: binds(sync, conflicts, trigger, schema.records))
    }
}

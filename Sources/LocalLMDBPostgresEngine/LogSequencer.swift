import LocalLMDBLMDB
import PostgresNIO

/// Numbers a store's change log after its commits, so that no commit holds a lock the next one
/// needs while the server flushes it.
///
/// A write transaction appends its log entry with a tick (`StoreSchema`) and no number, and
/// commits; commits of many processes are then flushed together. The sequencer gives every
/// committed entry it sees, in tick order, the next numbers, and moves the log's last number
/// (`<prefix>_sequencer.last`, a row no writer locks) with them, in short transactions that hold
/// the store's sequencing lock (an advisory lock, one sequencer at a time per store), at most
/// `batch` entries each. Whoever reads the log
/// numbers it first: a change feed, a change token, the notifier's poll, a trim. A read that
/// finds nothing to number (one statement) writes nothing.
///
/// Why the order is right (`StoreSchema`'s invariants): a commit that waited for another's row
/// takes its tick after that commit ended, and the sequencer, seeing it, sees the earlier one
/// too, with its smaller tick. An entry that commits after the sequencer looked is numbered
/// after those it numbered: it wrote no row they wrote (it would have waited for them), so its
/// changes commute with theirs.
///
/// One run is a short series of statements (`next(after:)`), so that the engine's thread and the
/// notifier's (blocking) and its callers' tasks (suspending) run the same rule; or, where the
/// store has it, one call of its numbering function (`createFunction`), which makes the same
/// steps on the server in one round trip.
struct LogSequencer {
    /// Where a run is.
    private enum Stage {
        case start
        /// The numbering function was called (`function`).
        case called
        case checked
        case began
        case locked
        case numbered
        case committed(last: UInt64, more: Bool)
        case done
    }

    /// What to do next.
    enum Step {
        /// Send this statement, and pass its result to `next(after:)`.
        case send(PostgresQuery)
        /// The run is over: the store's last sequence number, every entry seen numbered.
        case done(UInt64)
    }

    private let schema: StoreSchema
    /// Whether the run calls the store's numbering function (`StoreSchema.numberFunction`): the
    /// same steps in one statement, one round trip, rather than five.
    private let function: Bool
    private var stage = Stage.start
    /// The batches this run has numbered.
    private var batches = 0

    init(_ schema: StoreSchema, function: Bool = false) {
        self.schema = schema
        self.function = function
    }

    /// Whether the run has begun its transaction and not ended it: a failure must roll it back.
    var inTransaction: Bool {
        switch stage {
        case .began, .locked, .numbered, .committed: true
        case .start, .called, .checked, .done: false
        }
    }

    /// The next step, given the result of the statement the last step sent (nil at first).
    mutating func next(after result: PostgresQueryResult?) throws(DatabaseError) -> Step {
        switch stage {
        case .start:
            if function {
                stage = .called
                return .send(PostgresQuery(unsafeSQL: "SELECT p_last, p_more FROM \(schema.numberFunction)()"))
            }
            stage = .checked
            return .send(schema.sequenceQuery)
        case .called:
            guard let result, let row = result.rows.first, let (last, more) = try? row.decode((Int64?, Bool).self), let last, last >= 0 else {
                throw Self.unlisted
            }
            batches += 1
            if more && batches < Self.maxBatches { return .send(PostgresQuery(unsafeSQL: "SELECT p_last, p_more FROM \(schema.numberFunction)()")) }
            stage = .done
            return .done(UInt64(last))
        case .checked:
            guard let result, let (last, pending) = Self.lastAndPending(result) else { throw Self.unlisted }
            guard pending else {
                stage = .done
                return .done(last)
            }
            stage = .began
            return .send(StoreSchema.beginWrite)
        case .began:
            stage = .locked
            return .send(PostgresQuery(unsafeSQL: "SELECT pg_advisory_xact_lock(\(0x4C4D_4453 as Int32), \(Int32(truncatingIfNeeded: schema.migrationLockKey)))"))
        case .locked:
            stage = .numbered
            return .send(numberStatement)
        case .numbered:
            guard let result, let row = result.rows.first, let (last, pending, numbered) = try? row.decode((Int64?, Int64, Int64).self),
                  let last, last >= numbered
            else {
                throw Self.unlisted
            }
            // Every entry of the batch got its number, or none does (the run's transaction rolls back).
            guard numbered == pending else {
                throw .transactionFailed(reason: "the log's numbering numbered \(numbered) of \(pending) entries")
            }
            stage = .committed(last: UInt64(last), more: pending == Self.batch)
            return .send("COMMIT")
        case let .committed(last, more):
            // PostgreSQL answers a COMMIT of a transaction that had failed with ROLLBACK.
            guard result?.metadata.command == "COMMIT" else {
                throw .transactionFailed(reason: "the server rolled the log's numbering back (a statement in it had failed)")
            }
            // A full batch: the entries after it, in another (each transaction stays short), up to
            // `maxBatches` a run (a backlog's rest is the next run's: every run ends).
            batches += 1
            if more && batches < Self.maxBatches {
                stage = .began
                return .send(StoreSchema.beginWrite)
            }
            stage = .done
            return .done(last)
        case .done:
            // `run` returns at `.done` and never asks again; a caller that did gets an error, not a trap.
            throw .transactionFailed(reason: "the log's numbering was over")
        }
    }

    /// The most entries one transaction numbers: a backlog (a store written for long with no one
    /// reading its log) is numbered in transactions that each end well within a statement's bound.
    static let batch: Int64 = 20_000
    /// The most batches one run numbers.
    static let maxBatches = 16

    /// Numbers the first `batch` entries without a number, in tick order, after the log's last
    /// number, which moves with them; returns the last number, the entries found and the entries
    /// numbered. (Run holding the sequencing lock, in a statement that began after it was taken,
    /// so that it sees what the sequencer before it numbered. A batch that is a prefix in tick
    /// order is numbered as the whole would be: an entry's predecessors have smaller ticks.)
    private var numberStatement: PostgresQuery {
        PostgresQuery(unsafeSQL: Self.numberSQL(schema, batch: "$1"), binds: binds(Self.batch))
    }

    /// `numberStatement`'s text, its batch size `batch` (a parameter, or a constant).
    static func numberSQL(_ schema: StoreSchema, batch: String) -> String {
        let log = schema.log
        let sequencer = schema.sequencer
        return """
            WITH pending AS (
                SELECT tick, row_number() OVER (ORDER BY tick) AS n
                FROM (SELECT tick FROM \(log) WHERE sequence IS NULL ORDER BY tick LIMIT \(batch)) AS batch),
            moved AS (
                UPDATE \(sequencer) SET last = last + (SELECT count(*) FROM pending) WHERE EXISTS (SELECT 1 FROM pending)
                RETURNING last - (SELECT count(*) FROM pending) AS base, last),
            numbered AS (
                UPDATE \(log) SET sequence = moved.base + pending.n FROM pending, moved WHERE \(log).tick = pending.tick RETURNING 1)
            SELECT COALESCE((SELECT last FROM moved), (SELECT last FROM \(sequencer))), (SELECT count(*) FROM pending),
                (SELECT count(*) FROM numbered)
            """
    }

    /// The statement that creates (or replaces) the store's numbering function: a run's steps
    /// in one call. Its statements take a snapshot each (read committed, which it checks: the
    /// general steps name the level themselves), so the numbering, after the lock, sees what
    /// the sequencer before it numbered; the lock is held until the call's transaction ends.
    /// Returns the last number and whether a full batch was numbered (more may wait).
    static func createFunction(_ schema: StoreSchema) -> PostgresQuery {
        PostgresQuery(
            unsafeSQL: """
                CREATE OR REPLACE FUNCTION \(schema.numberFunction)(OUT p_last bigint, OUT p_more boolean) LANGUAGE plpgsql AS $number$
                DECLARE
                    v_found bigint;
                    v_numbered bigint;
                BEGIN
                    \(schema.procedureReadCommitted)
                    p_more := false;
                    IF NOT EXISTS (SELECT 1 FROM \(schema.log) WHERE sequence IS NULL) THEN
                        SELECT last INTO p_last FROM \(schema.sequencer);
                        RETURN;
                    END IF;
                    PERFORM pg_advisory_xact_lock(\(0x4C4D_4453 as Int32), \(Int32(truncatingIfNeeded: schema.migrationLockKey)));
                    \(numberSQL(schema, batch: String(batch)))
                    INTO p_last, v_found, v_numbered;
                    IF p_last IS NULL THEN
                        RETURN;
                    END IF;
                    -- Every entry of the batch gets its number, or none does.
                    IF v_numbered <> v_found THEN
                        RAISE EXCEPTION 'the log''s numbering numbered % of % entries', v_numbered, v_found USING ERRCODE = '\(StoreSchema.numberingFailedState)';
                    END IF;
                    p_more := v_found = \(batch);
                END
                $number$
                """)
    }

    /// The statement that creates (or replaces) the store's feed function: a change feed's
    /// numbering (`createFunction`, one batch) and reading in one call, one transaction; its
    /// rows are `PostgresEngine.changesSQL`'s, read after the numbering (a statement of its own,
    /// so it sees it), the last one saying whether a full batch was numbered (more may wait).
    static func createFeedFunction(_ schema: StoreSchema) -> PostgresQuery {
        PostgresQuery(
            unsafeSQL: """
                CREATE OR REPLACE FUNCTION \(schema.feedFunction)(p_after bigint, p_limit bigint)
                RETURNS TABLE (sequence bigint, changes bytea, more boolean) LANGUAGE plpgsql AS $feed$
                #variable_conflict use_column
                DECLARE
                    v_last bigint;
                    v_more boolean;
                BEGIN
                    SELECT n.p_last, n.p_more INTO v_last, v_more FROM \(schema.numberFunction)() AS n;
                    RETURN QUERY \(PostgresEngine.changesSQL(schema, after: "p_after", limit: "p_limit", more: "v_more"));
                END
                $feed$
                """)
    }

    /// What `StoreSchema.sequenceQuery` read: the store's last number, and whether entries wait for one.
    static func lastAndPending(_ result: PostgresQueryResult) -> (last: UInt64, pending: Bool)? {
        guard let row = result.rows.first, let (last, pending) = try? row.decode((Int64, Bool).self), last >= 0 else { return nil }
        return (UInt64(last), pending)
    }

    private static let unlisted = DatabaseError.server(operation: "numbering the change log", message: "the store is no longer listed on the server")

    /// Runs the sequencer, sending each statement with `send` (blocking); rolls its transaction
    /// back when a statement fails. Returns the store's last sequence number.
    static func run(
        _ schema: StoreSchema, function: Bool = false, _ send: (PostgresQuery) throws(DatabaseError) -> PostgresQueryResult
    ) throws(DatabaseError) -> UInt64 {
        var sequencer = LogSequencer(schema, function: function)
        var result: PostgresQueryResult?
        do throws(DatabaseError) {
            while true {
                switch try sequencer.next(after: result) {
                case let .send(query): result = try send(query)
                case let .done(last): return last
                }
            }
        } catch {
            if sequencer.inTransaction { _ = try? send("ROLLBACK") }
            throw error
        }
    }

    /// Runs the sequencer, sending each statement with `send` (suspending); rolls its transaction
    /// back when a statement fails. Returns the store's last sequence number.
    static func run(
        _ schema: StoreSchema, function: Bool = false, _ send: (PostgresQuery) async throws(DatabaseError) -> PostgresQueryResult
    ) async throws(DatabaseError) -> UInt64 {
        var sequencer = LogSequencer(schema, function: function)
        var result: PostgresQueryResult?
        do throws(DatabaseError) {
            while true {
                switch try sequencer.next(after: result) {
                case let .send(query): result = try await send(query)
                case let .done(last): return last
                }
            }
        } catch {
            if sequencer.inTransaction { _ = try? await send("ROLLBACK") }
            throw error
        }
    }
}

import Foundation
import LocalLMDBLMDB
import LocalLMDBStore
import LocalLMDBEngine
import LocalLMDB

/// How both replicators apply a run of a source's commits to a target, in one transaction: the
/// run's deletions, in order, then the records it wrote, with the values they hold at the source
/// when they are read (`written`; an id found deleted by then is deleted too). So the target
/// never goes back to an older state than the run's end, and every record a commit of the run
/// touched ends as the source holds it; a later run brings what changed after.
struct ReplicatedRun {
    /// The run's deletions, as operations on the target's keys, in order.
    var deletions: [WriteOperation] = []
    /// The ids the run wrote, each once (by its bytes: canonically equivalent ids are two
    /// records), in the order first written.
    var written: [String] = []

    /// The plan for `commits`, keyed for a target whose longest key is `maxKeySize`.
    init(_ commits: [LoggedCommit], maxKeySize: Int) {
        var seen = Set<ExactID>()
        for commit in commits {
            for change in commit.changes {
                switch change {
                case let .written(id, _):
                    if seen.insert(ExactID(id)).inserted { written.append(id) }
                case let .deleted(id, _):
                    deletions.append(.delete(StorageKey(id, maxKeySize: maxKeySize)))
                case let .typeDeleted(className):
                    // The owner adopts: a replicated deletion is the source's, whoever owns the
                    // name at the target.
                    deletions.append(.deleteTypes(
                        [StorageKey(className, maxKeySize: maxKeySize)], names: [className],
                        owner: StoredClass(name: className, mangledName: "", qualifiedName: "", adopts: true)))
                case .cleared:
                    deletions.append(.clear)
                }
            }
        }
    }

    /// The deletions of the ids among `written` that the source no longer holds.
    func absent(found: Set<ExactID>, maxKeySize: Int) -> [WriteOperation] {
        written.filter { !found.contains(ExactID($0)) }.map { .delete(StorageKey($0, maxKeySize: maxKeySize)) }
    }
}

/// Whether a replicator's `run()` retries after `error` (the server may come back, a lock or a
/// transaction end, space be freed) or stops with it (a closed database, a second replicator, a
/// damaged file, a refusal that no retry changes).
func isTransient(_ error: DatabaseError) -> Bool {
    switch error {
    case .server, .busy, .transactionAlreadyActive, .migrationInProgress:
        // (A migration under way, on either side, ends: the push waits for it.)
        return true
    case let .storage(_, code, _):
        // A full disk or map, too many readers, an interrupted or busy call.
        return [ENOSPC, EAGAIN, EINTR, EBUSY, -30792 /* MDB_MAP_FULL */, -30790 /* MDB_READERS_FULL */].contains(code)
    default:
        return false
    }
}

/// What both replicators' `run()` do: a pass (`pass`), then another after each commit `notifier`
/// announces, until the task is cancelled. A pass that fails with a transient error
/// (`isTransient`) is retried after a pause that doubles from 50 ms up to 5 s, with `failed`
/// told the error meanwhile (and nil once a pass succeeds); any other error is thrown.
nonisolated(nonsending) func follow(
    _ notifier: ChangeNotifier, pass: nonisolated(nonsending) () async throws(DatabaseError) -> Void,
    failed: (LocalDatabaseError?) -> Void
) async throws {
    let subscription = ChangeSubscription(notifier)
    defer { withExtendedLifetime(subscription) {} }
    var pause = Duration.milliseconds(50)
    while !Task.isCancelled {
        let version = notifier.version
        do throws(DatabaseError) {
            try await pass()
            failed(nil)
            pause = .milliseconds(50)
        } catch {
            guard isTransient(error) else { throw LocalDatabaseError(error) }
            failed(LocalDatabaseError(error))
            try? await Task.sleep(for: pause)
            pause = min(pause * 2, .seconds(5))
            continue
        }
        guard await notifier.wait(after: version) else { break }
    }
}

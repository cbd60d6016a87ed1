import Foundation
import LocalLMDB
import LocalLMDBLMDB
import LocalLMDBStore
import LocalLMDBEngine
import LocalLMDBPostgresEngine

// Sending: the pending local writes, in the order they were made.
extension Synchronizer {
    /// Sends the pending local writes, `writesPerPush` at a time, in the order they were made.
    nonisolated(nonsending) func push() async throws(DatabaseError) -> Int {
        var sent = 0
        var rounds = 0
        var allowed = 1
        while rounds < allowed {
            let pending = try await local.syncPending(limit: writesPerPush)
            state.withLock { $0.pending = pending.total }
            if rounds == 0 { allowed = pending.total / writesPerPush + 2 }
            rounds += 1
            guard !pending.writes.isEmpty else { break }
            var push = SyncPush(device: device)
            var source = SourceRecords()
            for write in pending.writes {
                if let value = write.value { source.records.append((StorageKey(write.id, maxKeySize: store.engine.maxKeySize).bytes, value)) }
            }
            let encoded = try local.syncRecords(source, maxKeySize: store.engine.maxKeySize)
            var next = 0
            for write in pending.writes {
                var record: Int?
                if write.value != nil {
                    record = next
                    next += 1
                }
                push.writes.append(SyncPush.Write(
                    key: StorageKey(write.id, maxKeySize: store.engine.maxKeySize).bytes, id: write.id, time: write.stamp.time,
                    base: write.base, record: record))
            }
            push.records = encoded.records
            let known = knownClasses.withLock { $0 }
            push.classRows = pending.classRows.filter { !known.contains($0.name) }
            let refused = try await store.engine.pushSync(push)
            knownClasses.withLock { $0.formUnion(push.classRows.map(\.name)) }
            var run = SyncRun(device: device)
            run.acknowledged = pending.writes.map { SyncRun.Acknowledged(id: $0.id, time: $0.stamp.time) }
            // A position reached in memory is recorded with the acknowledgement (a device that
            // mostly writes would otherwise never record it).
            if let ahead = reached.withLock({ $0 }), ahead != pending.position {
                run.expected = pending.position
                run.position = ahead
            }
            if !refused.isEmpty {
                var fetched = SyncFetched()
                fetched.versions = refused
                fetched.classRows = []
                let refusedRun = try syncRun(fetched, knownIDs: [], expected: nil, position: nil)
                run.changes = refusedRun.changes
                run.records = refusedRun.records
            }
            do throws(DatabaseError) {
                try await apply(run)
            } catch {
                guard case .transactionFailed = error, run.position != nil else { throw error }
                // The position moved meanwhile: the acknowledgement alone.
                run.expected = nil
                run.position = nil
                try await apply(run)
            }
            if run.position != nil { reached.withLock { if $0 == run.position { $0 = nil } } }
            sent += pending.writes.count
            state.withLock {
                $0.pushes += 1
                $0.pushed += pending.writes.count
                $0.refused += refused.count
            }
        }
        return sent
    }
}

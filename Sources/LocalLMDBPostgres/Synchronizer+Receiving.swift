import Foundation
import LocalLMDB
import LocalLMDBLMDB
import LocalLMDBStore
import LocalLMDBEngine
import LocalLMDBPostgresEngine

// Receiving: the server's commits after the recorded position, or a full copy.
extension Synchronizer {
    /// Receives the server's commits after the recorded position, a run at a time. The stamps
    /// of the records a run names are read first; only versions newer than the database's are
    /// fetched and applied (a device's own writes come back with stamps it holds already).
    nonisolated(nonsending) func pull() async throws(DatabaseError) {
        while true {
            let recorded = try await local.syncPending(limit: 0).position
            guard let recorded, let recordedPosition = PushReplicator.position(parsing: recorded),
                  recordedPosition.logID == store.engine.changeLogID
            else {
                try await fullCopy(expected: recorded)
                continue
            }
            var position = recordedPosition
            if let ahead = reached.withLock({ $0 }).flatMap(PushReplicator.position(parsing:)), ahead.logID == position.logID,
               ahead.sequence > position.sequence {
                position = ahead
            }
            state.withLock { $0.position = position.description }
            let feed: LoggedCommits
            do throws(DatabaseError) {
                feed = try await store.engine.changeFeed(since: position, limit: commitsPerPull)
            } catch {
                guard case .changesUnavailable = error else { throw error }
                try await fullCopy(expected: recorded)
                continue
            }
            guard !feed.commits.isEmpty else { return }
            var ids: [String] = []
            var seen = Set<ExactID>()
            var whole = false
            for commit in feed.commits {
                for change in commit.changes {
                    switch change {
                    case let .written(id, _), let .deleted(id, _):
                        if seen.insert(ExactID(id)).inserted { ids.append(id) }
                    case .typeDeleted, .cleared:
                        // The ids are not in the log: every version is read again.
                        whole = true
                    }
                }
            }
            if whole {
                try await fullCopy(expected: recorded)
                continue
            }
            let fetched = try await newerVersions(ids)
            guard !fetched.versions.isEmpty else {
                reached.withLock { $0 = feed.position.description }
                state.withLock { $0.position = feed.position.description }
                // The log held nothing after these when it was read: a later commit wakes `run()`.
                if feed.reachesEnd { return }
                continue
            }
            let run = try syncRun(fetched, knownIDs: ids, expected: recorded, position: feed.position.description)
            do throws(DatabaseError) {
                try await apply(run)
            } catch {
                // The recorded position moved (a process of the same database synchronized
                // meanwhile): read it again and go on from there.
                guard case .transactionFailed = error, try await local.syncPending(limit: 0).position != recorded else { throw error }
                continue
            }
            reached.withLock { $0 = nil }
            state.withLock {
                $0.pulls += 1
                $0.received += fetched.versions.count
                $0.position = feed.position.description
            }
            if feed.reachesEnd { return }
        }
    }

    /// The server's versions of `ids` later than the database's, with every class row, read in
    /// one statement that leaves out the values of this device's own versions (it holds them;
    /// one it does not, a database restored from an older copy, is read again with its value).
    private nonisolated(nonsending) func newerVersions(_ ids: [String]) async throws(DatabaseError) -> SyncFetched {
        guard !ids.isEmpty else { return SyncFetched() }
        var fetched = try await store.engine.syncVersions(ids: ids, omitting: device)
        let localStamps = try await local.syncStamps(ofIDs: ids)
        var ofKey: [[UInt8]: (id: String, stamp: SyncStamp?)] = [:]
        for (id, stamp) in zip(ids, localStamps) { ofKey[StorageKey(id, maxKeySize: store.engine.maxKeySize).bytes] = (id, stamp) }
        func isNewer(_ version: SyncVersion) -> Bool {
            guard let held = ofKey[version.key] else { return false }
            return held.stamp.map { version.stamp > $0 } ?? true
        }
        var newer: [SyncVersion] = []
        var unread: [String] = []
        for version in fetched.versions where isNewer(version) {
            if version.omitted {
                if let id = ofKey[version.key]?.id { unread.append(id) }
            } else {
                newer.append(version)
            }
        }
        if !unread.isEmpty {
            newer += try await store.engine.syncVersions(ids: unread).versions.filter { isNewer($0) && !$0.omitted }
        }
        fetched.versions = newer
        return fetched
    }

    /// Receives every version the server holds, a page of 10,000 at a time: each page is applied
    /// in a local transaction while the next one is fetched (at most one page waits, so memory
    /// stays bounded however large the store); then a last transaction records the position they
    /// were read at. Interrupted, the copy records no position, and the next pass copies again
    /// (a version already held changes nothing).
    private nonisolated(nonsending) func fullCopy(expected: String?) async throws(DatabaseError) {
        defer { state.withLock { $0.fullCopy = nil } }
        var applying: Task<Void, any Error>?
        var received = 0
        let snapshot: SyncFetched
        do throws(DatabaseError) {
            snapshot = try await store.engine.syncVersionPages(pageSize: 10_000) { [state] fetched, total in
                state.withLock { $0.fullCopy = PullReplicator.FullCopy(fetched: fetched, total: total) }
            } take: { page throws(DatabaseError) in
                received += page.versions.count
                try await Self.finish(applying)
                // Made into a local run (its records encoded afresh and checked) and applied
                // while the next page is fetched.
                applying = Task { [self, local] in
                    _ = try await local.applySync(try syncRun(page, knownIDs: [], expected: nil, position: nil))
                }
            }
            try await Self.finish(applying)
        } catch {
            // No apply outlives the pass (passes run one at a time).
            _ = try? await Self.finish(applying)
            throw error
        }
        guard let position = snapshot.position else {
            throw .changesUnavailable(token: "", reason: "the store's position was not read with its records")
        }
        var last = SyncFetched()
        last.classRows = snapshot.classRows
        try await apply(try syncRun(last, knownIDs: [], expected: expected, position: position.description))
        state.withLock {
            $0.fullCopies += 1
            $0.received += received
            $0.position = position.description
        }
    }

    /// Waits for `task` (a page's local transaction), giving back its error.
    private static func finish(_ task: Task<Void, any Error>?) async throws(DatabaseError) {
        guard let task else { return }
        do {
            try await task.value
        } catch let error as DatabaseError {
            throw error
        } catch {
            throw .transactionFailed(reason: "a page of the full copy was not applied: \(error)")
        }
    }

    /// The local run for `fetched`: each version keyed for this database, its record encoded
    /// afresh (and checked: a server's bytes are not trusted).
    func syncRun(_ fetched: SyncFetched, knownIDs: [String], expected: String?, position: String?) throws(DatabaseError) -> SyncRun {
        var run = SyncRun(device: device)
        run.expected = expected
        run.position = position
        run.classes = fetched.classRows.map {
            StoredClass(name: $0.name, mangledName: $0.mangledName, qualifiedName: $0.qualifiedName, adopts: true, copied: true)
        }
        var source = SourceRecords()
        for version in fetched.versions where !version.deleted {
            if let value = version.value { source.records.append((version.key, value)) }
        }
        let encoded = try local.syncRecords(source)
        run.records = encoded.records
        var idOfKey: [[UInt8]: String] = [:]
        for id in knownIDs { idOfKey[StorageKey(id, maxKeySize: local.storageKeySize).bytes] = id }
        var next = 0
        for version in fetched.versions {
            if !version.deleted, version.value != nil {
                let id = encoded.ids[next]
                run.changes.append(SyncRun.Change(key: StorageKey(id, maxKeySize: local.storageKeySize).bytes, id: id, stamp: version.stamp, record: next))
                next += 1
            } else {
                run.changes.append(SyncRun.Change(key: version.key, id: version.id ?? idOfKey[version.key], stamp: version.stamp, record: nil))
            }
        }
        return run
    }
}

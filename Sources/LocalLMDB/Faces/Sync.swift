import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// A write's place in the order every synchronized device agrees on (see <doc:SyncingDevices>):
/// a hybrid-logical-clock time, then the device that made it. Of two writes of one record, the
/// one with the later stamp wins, on every device and on the server.
public struct SyncStampValue: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The clock's time: milliseconds since 1970 in the high 48 bits, a counter in the low 16.
    public let time: UInt64
    /// The device that made the write; empty for a write made on the server directly.
    public let device: String

    init(_ stamp: SyncStamp) {
        time = stamp.time
        device = stamp.device
    }

    /// A stamp of `time` by `device` (for tests and tools that read stamps back).
    package init(time: UInt64, device: String) {
        self.time = time
        self.device = device
    }

    /// When the write was made, by the writer's clock (to the millisecond).
    public var date: Date { Date(timeIntervalSince1970: Double(time >> 16) / 1000) }

    public static func < (left: Self, right: Self) -> Bool {
        SyncStamp(time: left.time, device: left.device) < SyncStamp(time: right.time, device: right.device)
    }

    /// Equal when the times are and the devices' names are byte for byte.
    public static func == (left: Self, right: Self) -> Bool {
        SyncStamp(time: left.time, device: left.device) == SyncStamp(time: right.time, device: right.device)
    }

    public func hash(into hasher: inout Hasher) {
        SyncStamp(time: time, device: device).hash(into: &hasher)
    }

    public var description: String { "\(time)@\(device)" }
}

/// A local write that lost to a later write of the same record, kept in the database's conflict
/// log so that nothing is lost silently (see <doc:SyncingDevices>).
public struct SyncConflict: Sendable, Identifiable, Hashable {
    /// The conflict's number in the log (from 1, in the order they were found).
    public let id: UInt64
    /// The record's id.
    public let recordID: String
    /// The class name the losing version was stored under; empty when it was a deletion.
    public let className: String
    /// The losing local version as JSON; nil when the local write was a deletion.
    public let localJSON: String?
    /// The losing local write's stamp.
    public let localStamp: SyncStampValue
    /// The winning write's stamp (its device, and when it was made).
    public let winningStamp: SyncStampValue
    /// Whether the winning write deleted the record.
    public let winnerDeleted: Bool
    /// When the synchronizer found the conflict.
    public let foundAt: Date

    package init(_ record: SyncConflictRecord) {
        id = record.number
        recordID = record.id
        className = record.className
        localStamp = SyncStampValue(record.loser)
        winningStamp = SyncStampValue(record.winner)
        winnerDeleted = record.winnerDeleted
        foundAt = Date(timeIntervalSince1970: Double(record.foundAt) / 1000)
        if record.loserDeleted || record.value.isEmpty {
            localJSON = nil
        } else {
            localJSON = record.value.withBytes { value in
                (try? RecordDecoding.decode(value: value, id: record.id, encryption: nil)).map {
                    String(decoding: $0.object.bytes, as: UTF8.self)
                }
            }
        }
    }

    /// The losing local version; nil when it was a deletion.
    public var localVersion: DataObject? { localJSON.map(DataObject.init(rawString:)) }
}

/// Where one record stands with the server, on a synchronized database.
public enum SyncState: Sendable, Hashable {
    /// A local write the server has not received yet.
    case pending(SyncStampValue)
    /// The record (or its deletion) as the server has it, as of the last synchronization.
    case synced(SyncStampValue)
    /// The database holds no record of it and no stamp: never written, or written before the
    /// database synchronized and not sent since.
    case unknown
}

extension LocalDatabase {
    /// The local writes that lost to later ones, recorded after conflict number `after`
    /// (0: from the first), at most `limit`, in the order they were found. Empty on a database
    /// that does not synchronize.
    public nonisolated(nonsending) func syncConflicts(after: UInt64 = 0, limit: Int = 1_000) async throws(LocalDatabaseError) -> [SyncConflict] {
        do throws(DatabaseError) {
            return try await engine.read(ReadSyncConflicts(after: after, limit: max(0, limit))).map(SyncConflict.init)
        } catch { throw LocalDatabaseError(error) }
    }

    /// Where the record `id` stands with the server, on a synchronized database.
    public nonisolated(nonsending) func syncState(of id: String) async throws(LocalDatabaseError) -> SyncState {
        do throws(DatabaseError) {
            guard let row = try await engine.read(ReadSyncRow(id: id)) else { return .unknown }
            return row.pending ? .pending(SyncStampValue(row.stamp)) : .synced(SyncStampValue(row.stamp))
        } catch { throw LocalDatabaseError(error) }
    }

    /// For tests and tools: the record `id`'s stamp, the stamp its local write was made on (its
    /// base), and whether it is a deletion and pending; nil when it has no stamp.
    package nonisolated(nonsending) func syncStamps(of id: String) async throws(DatabaseError)
        -> (stamp: SyncStampValue, base: SyncStampValue, deleted: Bool, pending: Bool)?
    {
        guard let row = try await engine.read(ReadSyncRow(id: id)) else { return nil }
        return (SyncStampValue(row.stamp), SyncStampValue(row.base), row.deleted, row.pending)
    }

    /// For synchronizers: the stamp the database holds for each of `ids` (nil: none), in order.
    package nonisolated(nonsending) func syncStamps(ofIDs ids: [String]) async throws(DatabaseError) -> [SyncStamp?] {
        try await engine.read(ReadSyncStamps(ids: ids))
    }

    /// For synchronizers: the conflict log after `after`, at most `limit` entries.
    package nonisolated(nonsending) func syncConflictRecords(after: UInt64, limit: Int) async throws(DatabaseError) -> [SyncConflict] {
        try await engine.read(ReadSyncConflicts(after: after, limit: max(0, limit))).map(SyncConflict.init)
    }

    /// For synchronizers: turns synchronization on as `device` (every record stored becomes a
    /// pending write). Returns the records made pending; 0 when it was on already.
    package nonisolated(nonsending) func enableSync(device: String) async throws(DatabaseError) -> Int {
        try await engine.perform(.enableSync(device: device))
    }

    /// For synchronizers: the device, the position reached and the first `limit` pending writes,
    /// as of the last commit (one a process killed mid-commit left unpublished is published first).
    package nonisolated(nonsending) func syncPending(limit: Int) async throws(DatabaseError) -> SyncPending {
        try await engine.publishCommits()
        return try await engine.read(ReadSyncPending(limit: limit))
    }

    /// For synchronizers: applies a run of the server's versions and acknowledgements.
    package nonisolated(nonsending) func applySync(_ run: SyncRun) async throws(DatabaseError) -> Int {
        try await engine.perform(.synchronize(run))
    }

    /// For synchronizers: records as another engine stores them (each checked), encoded afresh
    /// for an engine whose longest key is `maxKeySize` (this database's when nil), in one batch;
    /// and each one's id, in the batch's order.
    package nonisolated func syncRecords(
        _ source: SourceRecords, maxKeySize: Int? = nil
    ) throws(DatabaseError) -> (records: RecordBatch, ids: [String]) {
        var parts = ReplicatedParts(maxKeySize: maxKeySize ?? engine.maxKeySize, encryption: nil, splitting: false)
        var ids: [String] = []
        try source.forEachRecord { id, className, document throws(DatabaseError) in
            ids.append(id)
            try parts.append(id: id, className: className, document: document)
        }
        return (parts.finished().first ?? RecordBatch(), ids)
    }
}

struct ReadSyncPending: PlainRead {
    let limit: Int
    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> SyncPending {
        var pending = try snapshot.syncPending(limit: limit)
        for name in Set(pending.writes.compactMap(\.className)).sorted() {
            if let row = try snapshot.classes.row(named: name) { pending.classRows.append(row) }
        }
        return pending
    }
}

struct ReadSyncConflicts: PlainRead {
    let after: UInt64
    let limit: Int
    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> [SyncConflictRecord] {
        try snapshot.syncConflicts(after: after, limit: limit)
    }
}

struct ReadSyncStamps: PlainRead {
    let ids: [String]
    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> [SyncStamp?] {
        var stamps: [SyncStamp?] = []
        stamps.reserveCapacity(ids.count)
        for id in ids { stamps.append(try snapshot.syncRow(id: id)?.stamp) }
        return stamps
    }
}

struct ReadSyncRow: PlainRead {
    let id: String
    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> SyncRow? {
        try snapshot.syncRow(id: id)
    }
}

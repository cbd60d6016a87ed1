#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LocalLMDBLMDB

/// A write's place in the order every synchronized database agrees on: a hybrid-logical-clock
/// time, then the device that wrote it. Two writes of one record by different devices never
/// have equal stamps, so the later one is the same everywhere (last writer wins).
///
/// `time` is milliseconds since 1970 shifted left by 16 bits, plus a counter (`SyncClock`).
@usableFromInline package struct SyncStamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The hybrid-logical-clock time.
    package var time: UInt64
    /// The device that wrote (`""`: a write made on the server, not by a synchronized device).
    package var device: String

    package init(time: UInt64, device: String) {
        self.time = time
        self.device = device
    }

    /// Equal when the times are and the devices' names are byte for byte (as `<` compares them:
    /// two spellings of one name are two devices).
    @usableFromInline package static func == (left: SyncStamp, right: SyncStamp) -> Bool {
        left.time == right.time && left.device.utf8.elementsEqual(right.device.utf8)
    }

    @usableFromInline package func hash(into hasher: inout Hasher) {
        hasher.combine(time)
        for byte in device.utf8 { hasher.combine(byte) }
    }

    @usableFromInline package static func < (left: SyncStamp, right: SyncStamp) -> Bool {
        left.time != right.time ? left.time < right.time : Array(left.device.utf8).lexicographicallyPrecedes(right.device.utf8)
    }

    @usableFromInline package var description: String { "\(time)@\(device)" }
}

/// A hybrid logical clock: each stamp is later than every stamp issued or seen before it, and
/// close to the wall clock (milliseconds in the high 48 bits, a counter in the low 16).
package enum SyncClock {
    /// The next stamp time after `last`.
    package static func next(after last: UInt64, now: UInt64 = wallTime()) -> UInt64 {
        max(now, last &+ 1)
    }

    /// The wall clock as a stamp time (counter 0).
    package static func wallTime() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let milliseconds = UInt64(max(0, now.tv_sec)) * 1000 + UInt64(max(0, now.tv_nsec)) / 1_000_000
        return milliseconds << 16
    }

    /// The milliseconds since 1970 of a stamp time.
    package static func milliseconds(of time: UInt64) -> UInt64 { time >> 16 }
}

/// What a synchronized database knows of one record's place in the agreed order: the stamp of
/// the version it holds, the stamp of the version a local write replaced (its base: what the
/// writer had seen), whether it is a deletion (a tombstone: the record is absent, and stays so
/// against any earlier write), and whether it is a local write not yet sent (pending). Stored
/// in `syncrows`, under the record's key:
///
/// ```
/// 8 bytes    the stamp's time (big-endian)
/// 8 bytes    the base's time (0: none)
/// 1 byte     flags: 1 deleted, 2 pending
/// 2 bytes    the device's UTF-8 length (big-endian), then the device
/// 2 bytes    the base's device's UTF-8 length, then that device
/// the rest   the record's id (UTF-8; the key is a digest of it when it is long)
/// ```
@usableFromInline package struct SyncRow: Sendable, Equatable {
    package var stamp: SyncStamp
    package var base: SyncStamp
    package var deleted: Bool
    package var pending: Bool
    package var id: String

    package init(stamp: SyncStamp, base: SyncStamp, deleted: Bool, pending: Bool, id: String) {
        self.stamp = stamp
        self.base = base
        self.deleted = deleted
        self.pending = pending
        self.id = id
    }

    /// The stored form; nil when a device's name is longer than 65,535 bytes.
    var encoded: [UInt8]? {
        let device = Array(stamp.device.utf8)
        let baseDevice = Array(base.device.utf8)
        guard device.count <= Int(UInt16.max), baseDevice.count <= Int(UInt16.max) else { return nil }
        var bytes = ChangeLog.uint64(stamp.time) + ChangeLog.uint64(base.time)
        bytes.append((deleted ? 1 : 0) | (pending ? 2 : 0))
        bytes += [UInt8(device.count >> 8), UInt8(device.count & 0xFF)] + device
        bytes += [UInt8(baseDevice.count >> 8), UInt8(baseDevice.count & 0xFF)] + baseDevice
        bytes += Array(id.utf8)
        return bytes
    }

    /// Parses a stored row; nil when it is not one.
    init?(parsing bytes: UnsafeRawBufferPointer) {
        guard bytes.count >= 21, bytes[16] & ~3 == 0 else { return nil }
        let deviceCount = Int(bytes[17]) << 8 | Int(bytes[18])
        let baseStart = 19 + deviceCount
        guard bytes.count >= baseStart + 2 else { return nil }
        let baseCount = Int(bytes[baseStart]) << 8 | Int(bytes[baseStart + 1])
        let idStart = baseStart + 2 + baseCount
        guard bytes.count >= idStart else { return nil }
        stamp = SyncStamp(
            time: ChangeLog.sequence(UnsafeRawBufferPointer(rebasing: bytes[0..<8])),
            device: String(decoding: UnsafeRawBufferPointer(rebasing: bytes[19..<baseStart]), as: UTF8.self))
        base = SyncStamp(
            time: ChangeLog.sequence(UnsafeRawBufferPointer(rebasing: bytes[8..<16])),
            device: String(decoding: UnsafeRawBufferPointer(rebasing: bytes[(baseStart + 2)..<idStart]), as: UTF8.self))
        deleted = bytes[16] & 1 != 0
        pending = bytes[16] & 2 != 0
        id = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[idStart...]), as: UTF8.self)
    }

    /// The key of the row's entry in `syncpending`: the stamp's time, then the record's key, so
    /// that pending writes are read in the order they were made.
    static func pendingKey(time: UInt64, key: [UInt8]) -> [UInt8] {
        ChangeLog.uint64(time) + key
    }
}

/// A local write that lost to a later one: kept in `syncconflicts`, in the order they were
/// found, for the app to read and act on.
///
/// ```
/// 8 bytes    the loser's stamp time          8 bytes   the winner's stamp time
/// 8 bytes    when it was found (ms since 1970)
/// 1 byte     1 when the loser was a deletion (no value follows), 2 when the winner was
/// 2 bytes    the loser's device length, then the device; the same for the winner's device
/// 4 bytes    the id's length, then the id    2 bytes the class name's length, then the name
/// the rest   the loser's stored `RecordValue`, as the database stored it
/// ```
@usableFromInline package struct SyncConflictRecord: Sendable, Equatable {
    package var number: UInt64
    package var id: String
    package var className: String
    package var loser: SyncStamp
    package var winner: SyncStamp
    package var loserDeleted: Bool
    package var winnerDeleted: Bool
    package var foundAt: UInt64
    /// The loser's stored `RecordValue` bytes; empty when it was a deletion.
    package var value: [UInt8]

    package init(
        number: UInt64, id: String, className: String, loser: SyncStamp, winner: SyncStamp, loserDeleted: Bool, winnerDeleted: Bool,
        foundAt: UInt64, value: [UInt8]
    ) {
        self.number = number
        self.id = id
        self.className = className
        self.loser = loser
        self.winner = winner
        self.loserDeleted = loserDeleted
        self.winnerDeleted = winnerDeleted
        self.foundAt = foundAt
        self.value = value
    }

    var encoded: [UInt8] {
        var bytes = ChangeLog.uint64(loser.time) + ChangeLog.uint64(winner.time) + ChangeLog.uint64(foundAt)
        bytes.append((loserDeleted ? 1 : 0) | (winnerDeleted ? 2 : 0))
        for device in [loser.device, winner.device] {
            let utf8 = Array(device.utf8.prefix(Int(UInt16.max)))
            bytes += [UInt8(utf8.count >> 8), UInt8(utf8.count & 0xFF)] + utf8
        }
        let id = Array(self.id.utf8)
        bytes += withUnsafeBytes(of: UInt32(truncatingIfNeeded: id.count).bigEndian) { Array($0) } + id
        let className = Array(self.className.utf8.prefix(Int(UInt16.max)))
        bytes += [UInt8(className.count >> 8), UInt8(className.count & 0xFF)] + className
        return bytes + value
    }

    init?(number: UInt64, parsing bytes: UnsafeRawBufferPointer) {
        var offset = 25
        guard bytes.count >= offset, bytes[24] & ~3 == 0 else { return nil }
        func take(_ count: Int) -> UnsafeRawBufferPointer? {
            guard count >= 0, bytes.count - offset >= count else { return nil }
            defer { offset += count }
            return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)])
        }
        func length(_ width: Int) -> Int? {
            guard let raw = take(width) else { return nil }
            return raw.reduce(0) { $0 << 8 | Int($1) }
        }
        guard let loserCount = length(2), let loserDevice = take(loserCount),
              let winnerCount = length(2), let winnerDevice = take(winnerCount),
              let idCount = length(4), let id = take(idCount),
              let classCount = length(2), let className = take(classCount)
        else { return nil }
        self.number = number
        loser = SyncStamp(time: ChangeLog.sequence(UnsafeRawBufferPointer(rebasing: bytes[0..<8])), device: String(decoding: loserDevice, as: UTF8.self))
        winner = SyncStamp(time: ChangeLog.sequence(UnsafeRawBufferPointer(rebasing: bytes[8..<16])), device: String(decoding: winnerDevice, as: UTF8.self))
        foundAt = ChangeLog.sequence(UnsafeRawBufferPointer(rebasing: bytes[16..<24]))
        loserDeleted = bytes[24] & 1 != 0
        winnerDeleted = bytes[24] & 2 != 0
        self.id = String(decoding: id, as: UTF8.self)
        self.className = String(decoding: className, as: UTF8.self)
        value = Array(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
    }
}

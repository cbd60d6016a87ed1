import CLMDB
import Foundation
@testable import LocalLMDB
import LocalLMDBEncryption
@testable import LocalLMDBStore
import LocalLMDBTestSupport
import Testing

/// 32 bytes from the system's random generator: a key's material, known to the test so that
/// it can look for it.
private func randomKeyBytes() -> [UInt8] {
    (0..<32).map { _ in UInt8.random(in: .min ... .max) }
}

/// `bytes` as lowercase hexadecimal text.
private func hex(_ bytes: [UInt8]) -> String {
    bytes.map { String(format: "%02x", $0) }.joined()
}

/// A configuration sealing under `current`, opening `previous` too.
private func sealingConfiguration(_ current: EncryptionKey, _ previous: [EncryptionKey] = []) throws -> DatabaseConfiguration {
    var configuration = DatabaseConfiguration()
    configuration.encryption = DatabaseEncryption(try AESGCMCipher(current: current, previous: previous))
    return configuration
}

/// Whether the byte sequence `needle` occurs anywhere in `haystack`.
private func occurs(_ needle: [UInt8], in haystack: [UInt8]) -> Bool {
    guard let first = needle.first, haystack.count >= needle.count else { return false }
    return haystack.withUnsafeBytes { hay -> Bool in
        needle.withUnsafeBytes { pin -> Bool in
            guard let base = hay.baseAddress, let pinBase = pin.baseAddress else { return false }
            let last = hay.count - pin.count
            var offset = 0
            while offset <= last {
                guard let found = memchr(base + offset, Int32(first), last - offset + 1) else { return false }
                let at = base.distance(to: UnsafeRawPointer(found))
                if memcmp(base + at, pinBase, pin.count) == 0 { return true }
                offset = at + 1
            }
            return false
        }
    }
}

/// Every regular file under `directory` (its path below it) with its bytes.
private func filesAndBytes(under directory: URL) throws -> [(name: String, bytes: [UInt8])] {
    let manager = FileManager.default
    var files: [(name: String, bytes: [UInt8])] = []
    for path in try manager.subpathsOfDirectory(atPath: directory.path).sorted() {
        let url = directory.appendingPathComponent(path)
        var isDirectory: ObjCBool = false
        guard manager.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
        files.append((name: path, bytes: [UInt8](try Data(contentsOf: url))))
    }
    return files
}

/// How many records `directory` holds, and how many of them are sealed under the key `keyID`,
/// read with raw LMDB; nil when the walk fails. No LocalDatabase may have the directory open in
/// this process meanwhile.
private func sealedCounts(_ directory: URL, keyID: String) -> (records: Int, underKey: Int)? {
    let wanted = Array(keyID.utf8)
    return withRawReader(directory, "records") { (txn: OpaquePointer?, dbi: MDB_dbi) -> (records: Int, underKey: Int)? in
        var cursor: OpaquePointer?
        guard mdb_cursor_open(txn, dbi, &cursor) == 0 else { return nil }
        defer { mdb_cursor_close(cursor) }
        var key = MDB_val()
        var value = MDB_val()
        var records = 0
        var underKey = 0
        var code = mdb_cursor_get(cursor, &key, &value, MDB_FIRST)
        while code == 0 {
            records += 1
            let bytes = UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size)
            if let stored = try? RecordValue(parsing: bytes), stored.isSealed, Array(stored.keyID) == wanted { underKey += 1 }
            code = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
        }
        guard code == MDB_NOTFOUND else { return nil }
        return (records: records, underKey: underKey)
    }
}

/// The id of record `number` of the killed re-encryption test.
private func killID(_ number: Int) -> String {
    String(format: "n%05d", number)
}

/// A `reencrypt-batches` progress line: the records visited and resealed so far by that run.
private func progressLine(_ line: String) -> (visited: Int, resealed: Int)? {
    let parts = line.split(separator: " ")
    guard parts.count == 3, parts[0] == "progress", let visited = Int(parts[1]), let resealed = Int(parts[2]) else { return nil }
    return (visited, resealed)
}

@Suite("Encryption: keys and plaintext on disk, killed re-encryption")
struct EncryptionKeyExposureTests {
    /// Neither key's bytes (whole, either half, or as hex text) nor any record's plaintext is in
    /// any file of the database directory, after writes under one key, a rotation to a second
    /// (rewrites, deletes, `reencrypt`) and a close. Ids are in the clear, and found: the search
    /// itself works.
    @Test func neitherKeyNorPlaintextReachesTheFiles() async throws {
        try await withTemporaryDirectory { root in
            let directory = root.appendingPathComponent("db")
            let bytesA = randomKeyBytes()
            let bytesB = randomKeyBytes()
            #expect(bytesA != bytesB)
            let keyA = try EncryptionKey(id: "exposure-a", bytes: bytesA)
            let keyB = try EncryptionKey(id: "exposure-b", bytes: bytesB)
            #expect(keyA.withUnsafeBytes { Array($0) } == bytesA)
            #expect(keyB.withUnsafeBytes { Array($0) } == bytesB)
            let marker = "PLAINTEXT-MARKER-\(UUID().uuidString)"
            // Every tenth record is long (overflow pages), the others short.
            func text(_ number: Int) -> String {
                number % 10 == 0 ? "\(marker) \(number) " + String(repeating: "long text ", count: 800) : "\(marker) \(number)"
            }

            // Under key A: a batch, single writes, a committed transaction and a rolled-back one.
            do {
                let database = try LocalDatabase(directory: directory, configuration: try sealingConfiguration(keyA))
                #expect(try await database.write(contentsOf: (0..<300).map { Record(id: "leak-\($0)", data: Note(text: text($0))) }) == 300)
                for number in 300..<320 { try await database.write(Record(id: "leak-\(number)", data: Note(text: text(number)))) }
                try await database.startTransaction()
                for number in 320..<340 { try await database.write(Record(id: "leak-\(number)", data: Note(text: text(number)))) }
                try await database.commitTransaction()
                try await database.startTransaction()
                try await database.write(Record(id: "rolled-back", data: Note(text: text(1_000))))
                try await database.rollbackTransaction()
                await database.close()
            }
            // Rotated to key B: rewrites, new records and deletes under B, then re-encryption.
            var deleted = Set<Int>()
            do {
                let database = try LocalDatabase(directory: directory, configuration: try sealingConfiguration(keyB, [keyA]))
                for number in stride(from: 0, to: 340, by: 7) { try await database.write(Record(id: "leak-\(number)", data: Note(text: text(number)))) }
                #expect(try await database.write(contentsOf: (340..<400).map { Record(id: "leak-\($0)", data: Note(text: text($0))) }) == 60)
                for number in stride(from: 3, to: 340, by: 11) {
                    #expect(try await database.delete(id: "leak-\(number)"))
                    deleted.insert(number)
                }
                #expect(try await database.reencrypt(batchSize: 64) > 0)
                #expect(try await database.encryptionState()?.keyIDs == ["exposure-b"])
                await database.close()
            }
            // Every record is there, with key B alone.
            do {
                let database = try LocalDatabase(directory: directory, configuration: try sealingConfiguration(keyB))
                var wrong: [Int] = []
                for number in 0..<400 where !deleted.contains(number) {
                    let note: Note? = try await database.read(id: "leak-\(number)")
                    if note?.text != text(number) { wrong.append(number) }
                }
                #expect(wrong.isEmpty, "records not read back exactly: \(wrong.prefix(20))")
                #expect(try await database.count(Note.self) == 400 - deleted.count)
                #expect(try await database.verifyIntegrity().isConsistent)
                await database.close()
            }

            let files = try filesAndBytes(under: directory)
            let dataFile = try #require(files.first(where: { $0.name == "data.mdb" }), "files: \(files.map { $0.name })")
            let data = dataFile.bytes
            #expect(files.contains(where: { $0.name == "lock.mdb" }), "files: \(files.map { $0.name })")
            // The search finds what is there: ids are stored in the clear, and a marker put in bytes.
            #expect(occurs(Array("leak-399".utf8), in: data))
            #expect(occurs(Array(marker.utf8), in: [UInt8]([0, 1]) + Array("\(marker) 5".utf8) + [UInt8]([2])))
            var needles: [(what: String, bytes: [UInt8])] = [(what: "a record's plaintext marker", bytes: Array(marker.utf8))]
            for (name, bytes) in [("key A", bytesA), ("key B", bytesB)] {
                needles.append((what: name, bytes: bytes))
                needles.append((what: "\(name)'s first 16 bytes", bytes: Array(bytes[..<16])))
                needles.append((what: "\(name)'s last 16 bytes", bytes: Array(bytes[16...])))
                needles.append((what: "\(name) as hex text", bytes: Array(hex(bytes).utf8)))
            }
            for file in files {
                for needle in needles {
                    #expect(!occurs(needle.bytes, in: file.bytes), "\(needle.what) is in \(file.name) (\(file.bytes.count) bytes)")
                }
            }
        }
    }

    /// Re-encryption killed with SIGKILL at moments the test does not choose at a batch
    /// boundary, several times over: each round, a child re-encrypts in small batches and is
    /// killed upon the test reading one of its progress lines (written after a batch's commit,
    /// the child going straight on to read, seal and commit the next). After each kill: on
    /// disk, the batches it reported are sealed under the new key, plus at most the one it was
    /// committing; every record reads back exactly with both keys; the integrity check is
    /// consistent; both keys are still required. Then an in-process `reencrypt` seals exactly
    /// the rest, and the new key alone reads every record.
    @Test func reencryptionKilledAtArbitraryMomentsLosesNothing() async throws {
        try await withTemporaryDirectory { root in
            let directory = root.appendingPathComponent("db")
            let total = 3_000
            let rounds = 5
            let bytesA = randomKeyBytes()
            let bytesB = randomKeyBytes()
            let keyA = try EncryptionKey(id: "kill-a", bytes: bytesA)
            let keyB = try EncryptionKey(id: "kill-b", bytes: bytesB)
            // The child seals under B (first), and opens A's values.
            let helperKeys = "kill-b=\(hex(bytesB)),kill-a=\(hex(bytesA))"
            func text(_ number: Int) -> String {
                "record \(number): " + String(repeating: String(number % 10), count: number % 97)
            }
            do {
                let database = try LocalDatabase(directory: directory, configuration: try sealingConfiguration(keyA))
                #expect(try await database.write(contentsOf: (0..<total).map { Record(id: killID($0), data: Note(text: text($0))) }) == total)
                await database.close()
            }

            var underB = 0
            var finishedByAChild = false
            for round in 1...rounds {
                let batchSize = Int.random(in: 2...24)
                let extraLines = Int.random(in: 0...3)
                let (process, output) = try launchHelper(
                    ["reencrypt-batches", directory.path, String(batchSize)], environment: ["HELPER_KEYS": helperKeys])
                let run: WatchedRun
                do {
                    run = try await withTimeout(seconds: 300) {
                        await onThread(stackSize: 1 << 20) {
                            // Upon the `extraLines + 1`th line reporting records this run resealed.
                            killAfterLines(process, output, count: extraLines + 1) { (progressLine($0)?.resealed ?? 0) > 0 }
                        }
                    }
                } catch {
                    process.send(SIGKILL)
                    throw error
                }
                let context = "round \(round) (batches of \(batchSize), killed at fresh line \(extraLines + 1)), last lines \(run.lines.suffix(5))"
                // A child that finished before the kill reached it (a very slow test process) is
                // no failure, but leaves nothing more to interrupt.
                let finished = run.lines.contains { $0.hasPrefix("done ") }
                if finished {
                    #expect(run.termination == .exit(0) || run.termination == .signal(SIGKILL), "\(context)")
                } else {
                    #expect(run.killed, "\(context): the child ended by itself, \(run.termination)")
                    #expect(run.termination == .signal(SIGKILL), "\(context)")
                }
                let reported = run.lines.compactMap { progressLine($0)?.resealed }.max() ?? 0
                #expect(reported > 0, "\(context)")

                // On disk: what it reported, and at most the batch it was committing.
                let counts = try #require(sealedCounts(directory, keyID: "kill-b"), "\(context)")
                #expect(counts.records == total, "\(context)")
                #expect(counts.underKey >= underB + reported, "\(context): \(underB) sealed under B before, \(counts.underKey) after, \(reported) reported")
                #expect(counts.underKey <= underB + reported + batchSize, "\(context): \(underB) sealed under B before, \(counts.underKey) after, \(reported) reported")
                underB = counts.underKey

                // Every record, exactly, with both keys; the database consistent.
                let database = try LocalDatabase(directory: directory, configuration: try sealingConfiguration(keyB, [keyA]))
                var wrong: [String] = []
                for number in 0..<total {
                    let note: Note? = try await database.read(id: killID(number))
                    if note?.text != text(number) { wrong.append(killID(number)) }
                }
                #expect(wrong.isEmpty, "\(context): records not read back exactly: \(wrong.prefix(20))")
                #expect(try await database.count(Note.self) == total, "\(context)")
                let report = try await database.verifyIntegrity()
                #expect(report.isConsistent, "\(context): \(report)")
                if finished {
                    finishedByAChild = true
                    #expect(try await database.encryptionState()?.keyIDs == ["kill-b"], "\(context)")
                } else {
                    #expect(try await database.encryptionState()?.keyIDs == ["kill-a", "kill-b"], "\(context)")
                }
                await database.close()
                if finished { break }
            }
            #expect(underB > 0)

            if !finishedByAChild {
                // Key A is still needed.
                await expectError({ if case .missingEncryptionKey("kill-a") = $0 { true } else { false } }) {
                    _ = try LocalDatabase(directory: directory, configuration: try sealingConfiguration(keyB))
                }
            }
            // In-process, it finishes: what the children sealed is only read, the rest sealed.
            do {
                let database = try LocalDatabase(directory: directory, configuration: try sealingConfiguration(keyB, [keyA]))
                #expect(try await database.reencrypt(batchSize: 256) == total - underB)
                #expect(try await database.encryptionState() == EncryptionState(keyIDs: ["kill-b"], mayHoldUnencryptedValues: false))
                #expect(try await database.verifyIntegrity().isConsistent)
                await database.close()
            }
            let sealed = try #require(sealedCounts(directory, keyID: "kill-b"))
            #expect(sealed.records == total && sealed.underKey == total)

            // Key B alone reads every record.
            let rotated = try LocalDatabase(directory: directory, configuration: try sealingConfiguration(keyB))
            var wrong: [String] = []
            for number in 0..<total {
                let note: Note? = try await rotated.read(id: killID(number))
                if note?.text != text(number) { wrong.append(killID(number)) }
            }
            #expect(wrong.isEmpty, "records not read back exactly with key B alone: \(wrong.prefix(20))")
            #expect(try await rotated.count(Note.self) == total)
            #expect(try await rotated.verifyIntegrity().isConsistent)
            await rotated.close()
        }
    }
}

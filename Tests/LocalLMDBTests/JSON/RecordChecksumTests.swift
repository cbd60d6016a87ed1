import CLMDB
import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import LocalLMDBTestSupport
import Testing

/// Reads a value with raw LMDB (no LocalDatabase may have the directory open meanwhile).
func rawGet(_ directory: URL, _ database: String, _ key: String) -> [UInt8]? {
    rawGet(directory, database, bytes: Array(key.utf8))
}

/// `rawGet` by the key's bytes.
func rawGet(_ directory: URL, _ database: String, bytes key: [UInt8]) -> [UInt8]? {
    var env: OpaquePointer?
    guard mdb_env_create(&env) == 0 else { return nil }
    defer { mdb_env_close(env) }
    mdb_env_set_maxdbs(env, 8)
    guard mdb_env_open(env, directory.path, UInt32(MDB_RDONLY), 0o600) == 0 else { return nil }
    var txn: OpaquePointer?
    var dbi: MDB_dbi = 0
    guard mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn) == 0 else { return nil }
    defer { mdb_txn_abort(txn) }
    guard mdb_dbi_open(txn, database, 0, &dbi) == 0 else { return nil }
    var keyBytes = key
    return keyBytes.withUnsafeMutableBytes { keyBuffer -> [UInt8]? in
        var keyValue = MDB_val(mv_size: keyBuffer.count, mv_data: keyBuffer.baseAddress)
        var dataValue = MDB_val()
        guard mdb_get(txn, dbi, &keyValue, &dataValue) == 0, let data = dataValue.mv_data else { return nil }
        return Array(UnsafeRawBufferPointer(start: data, count: dataValue.mv_size))
    }
}

@Suite("Record checksums")
struct RecordChecksumTests {
    /// Before checksums, bytes changed on disk that still formed valid JSON were read as data:
    /// a digit changed by a disk fault came back as another number, silently.
    @Test func aChangedDigitIsACorruptRecordNotAnotherValue() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("db")
            #expect(try runHelper(["write-count", url.path, "c", "10"]).lines == ["done"])
            var value = try #require(rawGet(url, "records", "c-2"))
            #expect(value.first == RecordValue.formatVersion)
            let digit = try #require(value.lastIndex(of: UInt8(ascii: "2")))
            value[digit] = UInt8(ascii: "7")
            rawPut(url, "records", [(Array("c-2".utf8), value)])

            let database = try LocalDatabase(directory: url)
            await expectError({ error in
                if case let .corruptRecord(id, reason) = error { id == "c-2" && reason.contains("checksum") } else { false }
            }) {
                let _: Entry? = try await database.read(id: "c-2")
            }
            await #expect(throws: LocalDatabaseError.self) { let _: [Entry] = try await database.read() }
            let intact: Entry? = try await database.read(id: "c-3")
            #expect(intact?.sequence == 3)
            let report = try await database.verifyIntegrity()
            #expect(report.problems.count == 1)
            #expect(report.problems.contains { if case .undecodableRecord("c-2", _) = $0 { true } else { false } })
        }
    }

    /// Databases written before checksums (layout 1, values of format 1) are read as they are;
    /// the layout is marked 2 when the database is first opened for writing, not before.
    @Test func recordsWithoutChecksumsAreStillReadAndTheLayoutIsMarkedOnceWritable() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("db")
            #expect(try runHelper(["write-count", url.path, "c", "3"]).lines == ["done"])
            // Rewrite c-1 as an earlier version stored it: format 1, no checksum.
            let value = try #require(rawGet(url, "records", "c-1"))
            let stored = try value.withUnsafeBytes { bytes in try RecordValue(parsing: bytes) }
            let headerEnd = value.count - stored.json.count - RecordValue.checksumSize
            let formatOne = [RecordValue.uncheckedFormatVersion] + value[1..<headerEnd] + value[(headerEnd + RecordValue.checksumSize)...]
            rawPut(url, "records", [(Array("c-1".utf8), Array(formatOne))])
            rawPut(url, "meta", [(Array("format".utf8), [1])])

            do {
                let readOnly = try LocalDatabase(directory: url, configuration: DatabaseConfiguration(readOnly: true))
                let old: Entry? = try await readOnly.read(id: "c-1")
                #expect(old?.sequence == 1)
                #expect(try await readOnly.verifyIntegrity().isConsistent)
                await readOnly.close()
            }
            #expect(rawGet(url, "meta", "format") == [1])

            do {
                let database = try LocalDatabase(directory: url)
                let entries: [Entry] = try await database.read()
                #expect(entries.map(\.sequence).sorted() == [0, 1, 2])
                try await database.write(Record(id: "c-1", data: Entry(sequence: 11, payload: "rewritten")))
                await database.close()
            }
            #expect(rawGet(url, "meta", "format") == [RecordStore.layoutVersion])
            #expect(rawGet(url, "records", "c-1")?.first == RecordValue.formatVersion)
        }
    }

    /// A layout this version does not know is refused, never guessed at.
    @Test func anUnknownLayoutIsRefused() async throws {
        try await withTemporaryDirectory { directory async throws in
            let url = directory.appendingPathComponent("db")
            #expect(try runHelper(["write-count", url.path, "c", "1"]).lines == ["done"])
            rawPut(url, "meta", [(Array("format".utf8), [8])])
            await expectError({ if case .unsupportedFormat(8, _) = $0 { true } else { false } }) {
                _ = try LocalDatabase(directory: url)
            }
        }
    }

    /// Every change of a single bit, anywhere in a document, changes its checksum, including
    /// in the last, partial word.
    @Test func everySingleBitChangeIsDetected() {
        var document = Array(#"{"object":"Entry","sequence":123,"payload":"a document of an odd length…"}"#.utf8)
        #expect(document.count % 8 != 0)
        let original = document.withUnsafeBytes { RecordChecksum.of($0) }
        for index in document.indices {
            for bit in 0..<8 {
                document[index] ^= 1 << bit
                let changed = document.withUnsafeBytes { RecordChecksum.of($0) }
                document[index] ^= 1 << bit
                #expect(changed != original, "byte \(index) bit \(bit)")
            }
        }
        // A zero byte appended is not the same document either (the length is mixed in).
        let longer = (document + [0]).withUnsafeBytes { RecordChecksum.of($0) }
        #expect(longer != original)
    }

    /// The checksum covers the header too: a changed class name is a corrupt record, not a
    /// record of another class.
    @Test func aChangedClassNameIsACorruptRecord() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("db")
            #expect(try runHelper(["write-count", url.path, "c", "3"]).lines == ["done"])
            var value = try #require(rawGet(url, "records", "c-1"))
            let name = try #require(value.firstIndex(of: UInt8(ascii: "E")))  // "Entry", in the header
            value[name] = UInt8(ascii: "F")
            rawPut(url, "records", [(Array("c-1".utf8), value)])
            let database = try LocalDatabase(directory: url)
            await expectError({ if case .corruptRecord("c-1", _) = $0 { true } else { false } }) {
                let _: Entry? = try await database.read(id: "c-1")
            }
            #expect(try await database.verifyIntegrity().problems.count >= 1)
        }
    }

    /// An intact checksum is no licence for unbounded nesting: anyone can compute one, and a
    /// document nested deeper than the validator allows would exhaust the stack of a recursive
    /// reader. Such a document is checked, and refused.
    @Test func aDeeplyNestedDocumentWithAValidChecksumIsCheckedAndRefused() async throws {
        try await withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("db")
            #expect(try runHelper(["write-count", url.path, "c", "1"]).lines == ["done"])
            let depth = 100_000
            let json = Array(#"{"object":"Entry","payload":"#.utf8) + Array(repeating: UInt8(ascii: "["), count: depth)
                + Array(repeating: UInt8(ascii: "]"), count: depth) + Array(#","sequence":1}"#.utf8)
            var value: [UInt8] = []
            RecordValue.appendHeader(className: "Entry", fullID: nil, to: &value)
            let headerSize = value.count
            value += json
            RecordValue.sealChecksum(in: &value, headerSize: headerSize)
            rawPut(url, "records", [(Array("c-0".utf8), value)])
            let database = try LocalDatabase(directory: url)
            await expectError({ if case .corruptRecord("c-0", _) = $0 { true } else { false } }) {
                let _: Entry? = try await database.read(id: "c-0")
            }
        }
    }

    @Test func openingsCountEveryBraceAndBracket() {
        for length in [0, 1, 7, 8, 9, 31, 64, 100] {
            let bytes: [UInt8] = (0..<length).map { index in [UInt8(ascii: "{"), UInt8(ascii: "["), UInt8(ascii: "a"), 0x5B | 0x80, 0x7B ^ 0x20, 0xFF][index % 6] }
            let expected = bytes.filter { $0 == UInt8(ascii: "{") || $0 == UInt8(ascii: "[") }.count
            #expect(bytes.withUnsafeBytes { RecordChecksum.openings(in: $0) } == expected, "length \(length)")
        }
    }
}

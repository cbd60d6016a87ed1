import LocalLMDBLMDB
import LocalLMDBJSON

/// An index as the database stores it: its definition, the class it indexes, and the number
/// its entries' keys start with.
///
/// Layout: the `indexes` database maps the class name, a zero byte and the index's name to
/// `number` (4 bytes, big-endian) followed by the definition's stored form. The `entries`
/// database (`MDB_DUPSORT`) maps `number` followed by the entry's `IndexKey` tuple to the keys
/// of the records that have it. A key longer than `maxKeySize - 32` bytes is stored as its first
/// `maxKeySize - 32` bytes (its *stem*) and the SHA-256 of the whole key, so that such a key is
/// exactly `maxKeySize` bytes long and a whole one is at most its stem's length: a whole key
/// then sorts where its value does among them all. Distinct values never share a key; a query
/// rereads the record of a shortened entry to compare its whole value, and sorts the entries
/// that share a stem by their whole values.
package struct StoredIndex: Sendable, Hashable {
    package let number: UInt32
    package let className: String
    package let definition: IndexDefinition

    /// The `indexes` key: the class name, a zero byte, the index's name.
    package static func catalogKey(className: String, name: String) -> [UInt8] {
        Array(className.utf8) + [0] + Array(name.utf8)
    }

    package var catalogValue: [UInt8] {
        withUnsafeBytes(of: number.bigEndian, Array.init) + definition.encoded
    }

    package init(number: UInt32, className: String, definition: IndexDefinition) {
        self.number = number
        self.className = className
        self.definition = definition
    }

    /// Parses an `indexes` pair; nil when it is not one this version reads.
    package init?(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        guard let separator = key.firstIndex(of: 0), value.count > 4 else { return nil }
        let number = value.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard let definition = IndexDefinition(parsing: UnsafeRawBufferPointer(rebasing: value[4...])) else { return nil }
        self.init(number: number, className: String(decoding: UnsafeRawBufferPointer(rebasing: key[..<separator]), as: UTF8.self), definition: definition)
    }

    /// The entry key for `tuple`: the number, then the tuple, or its truncated and hashed form.
    package func entryKey(_ tuple: [UInt8], maxKeySize: Int) -> [UInt8] {
        var key = withUnsafeBytes(of: number.bigEndian, Array.init)
        key.append(contentsOf: tuple)
        return Self.entryKey(whole: key, maxKeySize: maxKeySize)
    }

    /// The entry key for `key` (the number, then the tuple): itself, or its shortened form.
    static func entryKey(whole key: [UInt8], maxKeySize: Int) -> [UInt8] {
        guard key.count > Self.stemLength(maxKeySize) else { return key }
        let digest = SHA256.digest(key)
        return Array(key.prefix(Self.stemLength(maxKeySize))) + digest
    }

    /// The length of a shortened key's first part, and the most a whole key can have.
    static func stemLength(_ maxKeySize: Int) -> Int { maxKeySize - 32 }

    /// Whether an entry key is the truncated form of a longer one.
    static func isTruncated(_ key: UnsafeRawBufferPointer, maxKeySize: Int) -> Bool {
        key.count == maxKeySize
    }

    /// The first bytes of every entry key of this index.
    var keyPrefix: [UInt8] { withUnsafeBytes(of: number.bigEndian, Array.init) }
}

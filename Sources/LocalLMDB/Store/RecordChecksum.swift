/// The checksum of a record's JSON document, stored in its value (format 2) so that a read can
/// tell the bytes LocalLMDB wrote from bytes changed since, without parsing the document.
///
/// A 64-bit hash over 8-byte little-endian words: each step (`h = ((h ^ word) &* k)`, then
/// `h ^= h >> 32`) is a bijection of `h` for a fixed word and of the word for a fixed `h`, so a
/// change confined to any one word always changes the result; other changes go unnoticed with
/// a probability of about 2⁻⁶⁴. The length is mixed in first, and the tail is zero-padded. It
/// guards against corruption, not against a writer that means harm: such a writer can write
/// anything, checksum included, and the reader still never reads outside the value's bytes.
enum RecordChecksum {
    /// The checksum of `bytes`.
    static func of(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        let multiplier: UInt64 = 0xFF51_AFD7_ED55_8CCD
        var hash: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(bytes.count)
        guard let base = bytes.baseAddress else { return finish(hash) }
        var offset = 0
        while offset + 8 <= bytes.count {
            let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            hash = (hash ^ word) &* multiplier
            hash ^= hash >> 32
            offset += 8
        }
        if offset < bytes.count {
            var word: UInt64 = 0
            for index in offset..<bytes.count {
                word |= UInt64(bytes[index]) << (8 * UInt64(index - offset))
            }
            hash = (hash ^ word) &* multiplier
            hash ^= hash >> 32
        }
        return finish(hash)
    }

    /// A final mix (MurmurHash3's), so every input bit reaches every output bit.
    private static func finish(_ value: UInt64) -> UInt64 {
        var hash = value
        hash ^= hash >> 33
        hash = hash &* 0xFF51_AFD7_ED55_8CCD
        hash ^= hash >> 33
        hash = hash &* 0xC4CE_B9FE_1A85_EC53
        hash ^= hash >> 33
        return hash
    }
}

import LocalLMDBBase

/// The checksum of a record's value (format 2): of its header (class name and full id) and of its
/// JSON document, so that a read can tell the bytes LocalLMDB wrote from bytes changed since,
/// without parsing the document.
///
/// A 64-bit hash over 8-byte little-endian words, in four lanes that take the words in turn
/// (so that the CPU works on four multiplications at once). In each lane, each step
/// (`h = (h ^ word) &* k`, then `h ^= h >> 32`) is a bijection of `h` for a fixed word and of
/// the word for a fixed `h`, and the lanes are combined by exclusive or after rotations, so a
/// change confined to any one word always changes the result; other changes go unnoticed with
/// a probability of about 2⁻⁶⁴. The length is mixed in first, and the tail is zero-padded. It
/// guards against corruption, not against a writer that means harm: such a writer can write
/// anything, checksum included, and the reader still never reads outside the value's bytes.
@usableFromInline package enum RecordChecksum {
    /// The checksum of `bytes`, continuing from `previous` (the checksum of the bytes before
    /// them, when a value is checked in two parts): `previous` enters the first lane only, so
    /// a change to the earlier part, which always changes `previous`, always changes the result.
    @inlinable package static func of(_ bytes: UnsafeRawBufferPointer, after previous: UInt64 = 0) -> UInt64 {
        let multiplier: UInt64 = 0xFF51_AFD7_ED55_8CCD
        let seed: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(bytes.count)
        var lanes: (UInt64, UInt64, UInt64, UInt64) = (seed ^ previous, seed &+ 1, seed &+ 2, seed &+ 3)
        @inline(__always) func step(_ hash: inout UInt64, _ word: UInt64) {
            hash = (hash ^ word) &* multiplier
            hash ^= hash >> 32
        }
        guard let base = bytes.baseAddress else { return finish(lanes.0) }
        @inline(__always) func word(_ offset: Int) -> UInt64 {
            UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        }
        var offset = 0
        while offset + 32 <= bytes.count {
            step(&lanes.0, word(offset))
            step(&lanes.1, word(offset + 8))
            step(&lanes.2, word(offset + 16))
            step(&lanes.3, word(offset + 24))
            offset += 32
        }
        while offset + 8 <= bytes.count {
            step(&lanes.0, word(offset))
            offset += 8
        }
        if offset < bytes.count {
            var tail: UInt64 = 0
            for index in offset..<bytes.count {
                tail |= UInt64(bytes[index]) << (8 * UInt64(index - offset))
            }
            step(&lanes.1, tail)
        }
        let combined = lanes.0 ^ lanes.1.rotated(by: 16) ^ lanes.2.rotated(by: 32) ^ lanes.3.rotated(by: 48)
        return finish(combined)
    }

    /// How many bytes of `bytes` are `{` or `[`: at least the document's depth of nesting,
    /// as every level opens with one (the ones inside strings only add to the count).
    @inlinable package static func openings(in bytes: UnsafeRawBufferPointer) -> Int {
        let low7: UInt64 = 0x7F7F_7F7F_7F7F_7F7F
        // `[` is `{` with bit 5 clear: setting it in every byte finds both as `{`.
        let pattern: UInt64 = 0x7B7B_7B7B_7B7B_7B7B
        var total = 0
        var offset = 0
        if let base = bytes.baseAddress {
            // A counter per byte, added into `total` before any could pass 255.
            var counters: UInt64 = 0
            var words = 0
            while offset + 8 <= bytes.count {
                let word = base.loadUnaligned(fromByteOffset: offset, as: UInt64.self) | 0x2020_2020_2020_2020
                let difference = word ^ pattern
                // 1 in each byte that is zero in `difference` (exactly), 0 in the others.
                counters &+= (~(((difference & low7) &+ low7) | difference | low7)) >> 7
                offset += 8
                words += 1
                if words == 255 {
                    total += Self.sumOfBytes(counters)
                    (counters, words) = (0, 0)
                }
            }
            total += Self.sumOfBytes(counters)
        }
        while offset < bytes.count {
            if bytes[offset] | 0x20 == 0x7B { total += 1 }
            offset += 1
        }
        return total
    }

    /// The sum of the eight bytes of `word`: pairs into 16-bit lanes (each at most 510), then
    /// the lanes (at most 2,040).
    @inline(__always)
    @inlinable static func sumOfBytes(_ word: UInt64) -> Int {
        let pairs = (word & 0x00FF_00FF_00FF_00FF) &+ ((word >> 8) & 0x00FF_00FF_00FF_00FF)
        return Int(truncatingIfNeeded: (pairs &* 0x0001_0001_0001_0001) >> 48)
    }

    /// A final mix (MurmurHash3's), so every input bit reaches every output bit.
    @inlinable static func finish(_ value: UInt64) -> UInt64 {
        var hash = value
        hash ^= hash >> 33
        hash = hash &* 0xFF51_AFD7_ED55_8CCD
        hash ^= hash >> 33
        hash = hash &* 0xC4CE_B9FE_1A85_EC53
        hash ^= hash >> 33
        return hash
    }
}

extension UInt64 {
    @inlinable @inline(__always) func rotated(by count: UInt64) -> UInt64 {
        self << count | self >> (64 - count)
    }
}


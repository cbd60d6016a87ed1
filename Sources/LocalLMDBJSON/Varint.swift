import LocalLMDBBase

/// The LEB128 numbers and length-prefixed byte strings of the store's own formats: the header
/// of a record's value (`RecordValue`) and the entries of the change log (`ChangeLog`).
/// Seven bits a byte, least significant first, the high bit set on every byte but the last.
@usableFromInline package enum Varint {
    /// Appends `number`, which must not be negative.
    @inlinable package static func append(_ number: Int, to bytes: inout [UInt8]) {
        var value = number
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    /// Appends `text`'s UTF-8, preceded by its length.
    @inlinable package static func append(lengthPrefixed text: String, to bytes: inout [UInt8]) {
        var text = text
        text.withUTF8 { append(lengthPrefixed: UnsafeRawBufferPointer($0), to: &bytes) }
    }

    /// Appends `raw`, preceded by its length.
    @inlinable package static func append(lengthPrefixed raw: UnsafeRawBufferPointer, to bytes: inout [UInt8]) {
        append(raw.count, to: &bytes)
        bytes.append(contentsOf: raw)
    }

    /// The number at `offset`, moving `offset` past it; nil when the bytes end first, or when
    /// it runs to `maxShift` bits without ending.
    @inlinable package static func number(in bytes: UnsafeRawBufferPointer, at offset: inout Int, maxShift: Int = 63) -> Int? {
        var value = 0
        var shift = 0
        while offset < bytes.count, shift < maxShift {
            let byte = bytes[offset]
            offset += 1
            value |= Int(byte & 0x7F) << shift
            if byte < 0x80 { return value >= 0 ? value : nil }
            shift += 7
        }
        return nil
    }

    /// The length-prefixed bytes at `offset`, moving `offset` past them; nil when their length
    /// cannot be read or runs past the end.
    @inlinable package static func lengthPrefixed(in bytes: UnsafeRawBufferPointer, at offset: inout Int, maxShift: Int = 63) -> UnsafeRawBufferPointer? {
        guard let length = number(in: bytes, at: &offset, maxShift: maxShift), length <= bytes.count - offset else { return nil }
        defer { offset += length }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + length)])
    }
}

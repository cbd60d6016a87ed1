import LocalLMDBLMDB
import LocalLMDBJSON

/// The layout of a value in the `records` database:
///
/// ```
/// byte 0          format version: 2 (1 for values written by earlier versions)
/// varint, bytes   the stored class name, UTF-8
/// varint, bytes   the full record id when the key is hashed; length 0 otherwise
/// 8 bytes         format 2 only: the JSON document's `RecordChecksum`, little-endian
/// rest            the object's JSON document
/// ```
///
/// The class name is kept outside the JSON so that type checks and the integrity walk need not
/// parse the document. The checksum lets a read trust a document that LocalLMDB wrote without
/// checking its grammar (see `RecordDecoding`).
@usableFromInline package struct RecordValue {
    /// The format written.
    @usableFromInline static let formatVersion: UInt8 = 2
    /// The format before checksums, still read.
    @usableFromInline static let uncheckedFormatVersion: UInt8 = 1
    /// Bytes of the stored checksum.
    @usableFromInline static let checksumSize = 8

    /// The header's bytes before the checksum (format byte, class name, full id).
    @usableFromInline let header: UnsafeRawBufferPointer
    /// The class name's UTF-8 bytes.
    @usableFromInline let className: UnsafeRawBufferPointer
    /// The full id's UTF-8 bytes, or empty when the key is the id.
    @usableFromInline let fullID: UnsafeRawBufferPointer
    /// The stored checksum of `json`; nil in a value of format 1.
    @usableFromInline let checksum: UInt64?
    /// The JSON document.
    @usableFromInline let json: UnsafeRawBufferPointer

    /// Parses a stored value; the views point into `bytes`.
    @inlinable init(parsing bytes: UnsafeRawBufferPointer) throws(RecordValueError) {
        guard let version = bytes.first else { throw .empty }
        guard version == Self.formatVersion || version == Self.uncheckedFormatVersion else { throw .unknownFormat(version) }
        var offset = 1
        className = try Self.lengthPrefixed(bytes, &offset)
        fullID = try Self.lengthPrefixed(bytes, &offset)
        header = UnsafeRawBufferPointer(rebasing: bytes[..<offset])
        if version == Self.formatVersion {
            guard bytes.count - offset >= Self.checksumSize else { throw .truncated }
            checksum = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            offset += Self.checksumSize
        } else {
            checksum = nil
        }
        json = UnsafeRawBufferPointer(rebasing: bytes[offset...])
        guard !json.isEmpty else { throw .truncated }
    }

    /// Whether the header and `json` are what was written: the checksum matches. Always false
    /// for a value of format 1, which has none.
    @inlinable var isIntact: Bool {
        checksum == Self.checksum(header: header, json: json)
    }

    /// The checksum of a value's header (up to the checksum) and JSON document.
    @inlinable static func checksum(header: UnsafeRawBufferPointer, json: UnsafeRawBufferPointer) -> UInt64 {
        RecordChecksum.of(json, after: RecordChecksum.of(header))
    }

    /// A length-prefixed name of the header. Lengths stop at 35 bits (5 bytes), as they always have.
    @inlinable static func lengthPrefixed(_ bytes: UnsafeRawBufferPointer, _ offset: inout Int) throws(RecordValueError) -> UnsafeRawBufferPointer {
        guard let field = Varint.lengthPrefixed(in: bytes, at: &offset, maxShift: 35) else { throw .truncated }
        return field
    }

    /// The class name as a String.
    @inlinable var classNameString: String { String(decoding: className, as: UTF8.self) }

    /// The record id: the full id when present, else the key itself.
    @inlinable func id(key: UnsafeRawBufferPointer) -> String {
        String(decoding: fullID.isEmpty ? key : fullID, as: UTF8.self)
    }

    /// Writes the header for a value, with room for the checksum; the caller appends the JSON
    /// document, then calls `sealChecksum` with the header's length.
    @inlinable package static func appendHeader(className: String, fullID: String?, to buffer: inout [UInt8]) {
        buffer.append(formatVersion)
        Varint.append(lengthPrefixed: className, to: &buffer)
        Varint.append(lengthPrefixed: fullID ?? "", to: &buffer)
        buffer.append(contentsOf: repeatElement(0, count: checksumSize))
    }

    /// Stores the checksum of the JSON document after the header of `headerSize` bytes.
    @inlinable static func sealChecksum(in value: inout [UInt8], headerSize: Int) {
        value.withUnsafeMutableBytes { sealChecksum(in: $0, headerSize: headerSize) }
    }

    /// `sealChecksum` on bytes in place.
    @inlinable package static func sealChecksum(in value: UnsafeMutableRawBufferPointer, headerSize: Int) {
        let bytes = UnsafeRawBufferPointer(value)
        let checksum = Self.checksum(
            header: UnsafeRawBufferPointer(rebasing: bytes[..<(headerSize - checksumSize)]),
            json: UnsafeRawBufferPointer(rebasing: bytes[headerSize...]))
        value.storeBytes(of: checksum.littleEndian, toByteOffset: headerSize - checksumSize, as: UInt64.self)
    }
}

/// Why a stored value could not be parsed.
@usableFromInline package enum RecordValueError: Error, CustomStringConvertible {
    case empty
    case unknownFormat(UInt8)
    case truncated

    @inlinable package var description: String {
        switch self {
        case .empty: return "the stored value is empty"
        case let .unknownFormat(version): return "unknown value format \(version)"
        case .truncated: return "the stored value is truncated"
        }
    }
}

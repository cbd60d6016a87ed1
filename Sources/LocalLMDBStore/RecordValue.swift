import LocalLMDBLMDB
import LocalLMDBJSON

/// The layout of a value in the `records` database:
///
/// ```
/// byte 0          format version: 2 (1 for values written by earlier versions; 3 sealed)
/// varint, bytes   the stored class name, UTF-8
/// varint, bytes   the full record id when the key is hashed; length 0 otherwise
/// 8 bytes         format 2 only: the JSON document's `RecordChecksum`, little-endian
/// varint, bytes   format 3 only: the id of the key the document is sealed under, UTF-8
/// rest            the object's JSON document; in format 3, the document sealed by a
///                 `ValueCipher` (see `StoreEncryption`), bound to the class name and id
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
    /// The format of an encrypted value: its document sealed (authenticated, so no checksum).
    @usableFromInline static let sealedFormatVersion: UInt8 = 3
    /// Bytes of the stored checksum.
    @usableFromInline static let checksumSize = 8

    /// The header's bytes before the checksum (format byte, class name, full id).
    @usableFromInline let header: UnsafeRawBufferPointer
    /// The class name's UTF-8 bytes.
    @usableFromInline let className: UnsafeRawBufferPointer
    /// The full id's UTF-8 bytes, or empty when the key is the id.
    @usableFromInline let fullID: UnsafeRawBufferPointer
    /// The stored checksum of `json`; nil in a value of format 1 or 3.
    @usableFromInline let checksum: UInt64?
    /// The id of the key the document is sealed under: empty unless the value is sealed.
    @usableFromInline let keyID: UnsafeRawBufferPointer
    /// The JSON document; when `isSealed`, the sealed document.
    @usableFromInline let json: UnsafeRawBufferPointer

    /// Whether the document is sealed (format 3).
    @inlinable var isSealed: Bool { checksum == nil && !keyID.isEmpty }

    /// Parses a stored value; the views point into `bytes`.
    @inlinable init(parsing bytes: UnsafeRawBufferPointer) throws(RecordValueError) {
        guard let version = bytes.first else { throw .empty }
        guard version == Self.formatVersion || version == Self.uncheckedFormatVersion || version == Self.sealedFormatVersion else {
            throw .unknownFormat(version)
        }
        var offset = 1
        className = try Self.lengthPrefixed(bytes, &offset)
        fullID = try Self.lengthPrefixed(bytes, &offset)
        header = UnsafeRawBufferPointer(rebasing: bytes[..<offset])
        if version == Self.formatVersion {
            guard bytes.count - offset >= Self.checksumSize else { throw .truncated }
            checksum = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            offset += Self.checksumSize
            keyID = UnsafeRawBufferPointer(start: nil, count: 0)
        } else if version == Self.sealedFormatVersion {
            checksum = nil
            keyID = try Self.lengthPrefixed(bytes, &offset)
            guard !keyID.isEmpty else { throw .truncated }
        } else {
            checksum = nil
            keyID = UnsafeRawBufferPointer(start: nil, count: 0)
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
        String(decoding: idBytes(key: key), as: UTF8.self)
    }

    /// The record id's UTF-8 bytes: the full id when present, else the key itself.
    @inlinable func idBytes(key: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        fullID.isEmpty ? key : fullID
    }

    /// Writes the header for a value, with room for the checksum; the caller appends the JSON
    /// document, then calls `sealChecksum` with the header's length.
    @inlinable package static func appendHeader(className: String, fullID: String?, to buffer: inout [UInt8]) {
        buffer.append(formatVersion)
        Varint.append(lengthPrefixed: className, to: &buffer)
        Varint.append(lengthPrefixed: fullID ?? "", to: &buffer)
        buffer.append(contentsOf: repeatElement(0, count: checksumSize))
    }

    /// The header of a sealed value (format 3), up to the sealed document.
    static func appendSealedHeader(className: UnsafeRawBufferPointer, fullID: UnsafeRawBufferPointer, keyID: String, to buffer: inout [UInt8]) {
        buffer.append(sealedFormatVersion)
        Varint.append(lengthPrefixed: className, to: &buffer)
        Varint.append(lengthPrefixed: fullID, to: &buffer)
        Varint.append(lengthPrefixed: keyID, to: &buffer)
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

import LocalLMDBLMDB
import LocalLMDBJSON

/// A secondary index of one stored class, as the database keeps it: the fields whose values
/// (`IndexKey`) order its entries, bytes and names only.
///
/// Definitions are stored in the database (`indexes`), and every write maintains the entries of
/// the class it writes from the stored bytes, in the same transaction: a process whose models
/// do not declare an index keeps it exact all the same.
@usableFromInline package struct IndexDefinition: Sendable, Hashable {
    /// One indexed field: a path of member names from the record's top object (`["address",
    /// "city"]`), and the kind its values are compared as.
    package struct Field: Sendable, Hashable {
        package var path: [String]
        package var kind: IndexKey.FieldKind

        package init(path: [String], kind: IndexKey.FieldKind) {
            self.path = path
            self.kind = kind
        }
    }

    package let fields: [Field]
    /// No two records of the class may have equal values (an entry key names one record).
    package let isUnique: Bool
    /// The first field holds an array, and each element is indexed (a record has one entry
    /// per distinct element; none for an empty array).
    package let isMultiEntry: Bool
    /// The store keeps how many entries each run of consecutive keys holds (`RangeCounts`), so
    /// a count of a range reads a few numbers rather than every entry. Not for a multi-entry index.
    package let isCounted: Bool
    /// The index's name, unique within its class: its fields and options, spelt out. Two
    /// declarations with one name are the same index. (Spelt once, here: every query and write
    /// looks indexes up by it.)
    package let name: String

    package init(fields: [Field], isUnique: Bool, isMultiEntry: Bool, isCounted: Bool = false) {
        assert(!(isCounted && isMultiEntry), "a multi-entry index is not counted")
        self.fields = fields
        self.isUnique = isUnique
        self.isMultiEntry = isMultiEntry
        self.isCounted = isCounted
        var name = isMultiEntry ? "each " : ""
        name += fields.map { field in
            field.path.joined(separator: ".") + (field.kind == .date ? " (date)" : "")
        }.joined(separator: ", ")
        if isUnique { name += " unique" }
        if isCounted { name += " counted" }
        self.name = name
    }

    // The name follows from the rest: left out of equality and hashing.
    @usableFromInline package static func == (left: Self, right: Self) -> Bool {
        left.isUnique == right.isUnique && left.isMultiEntry == right.isMultiEntry && left.isCounted == right.isCounted
            && left.fields == right.fields
    }

    @usableFromInline package func hash(into hasher: inout Hasher) {
        hasher.combine(fields)
        hasher.combine(isUnique)
        hasher.combine(isMultiEntry)
        hasher.combine(isCounted)
    }

    // MARK: Stored form

    /// `[1, flags, field count, per field: kind, component count, per component: varint length, UTF-8]`;
    /// flags: 1 unique, 2 multi-entry, 4 counted.
    var encoded: [UInt8] {
        var bytes: [UInt8] = [1, (isUnique ? 1 : 0) | (isMultiEntry ? 2 : 0) | (isCounted ? 4 : 0), UInt8(clamping: fields.count)]
        for field in fields {
            bytes.append(field.kind.rawValue)
            bytes.append(UInt8(clamping: field.path.count))
            for component in field.path {
                Varint.append(component.utf8.count, to: &bytes)
                bytes.append(contentsOf: component.utf8)
            }
        }
        return bytes
    }

    init?(parsing bytes: UnsafeRawBufferPointer) {
        var offset = 0
        func byte() -> UInt8? {
            guard offset < bytes.count else { return nil }
            defer { offset += 1 }
            return bytes[offset]
        }
        guard byte() == 1, let flags = byte(), let count = byte() else { return nil }
        var fields: [Field] = []
        for _ in 0..<count {
            guard let kindByte = byte(), let kind = IndexKey.FieldKind(rawValue: kindByte), let components = byte() else { return nil }
            var path: [String] = []
            for _ in 0..<components {
                guard let component = Varint.lengthPrefixed(in: bytes, at: &offset) else { return nil }
                path.append(String(decoding: component, as: UTF8.self))
            }
            fields.append(Field(path: path, kind: kind))
        }
        // A counted multi-entry index is not one this version wrote.
        guard flags & 6 != 6 else { return nil }
        self.init(fields: fields, isUnique: flags & 1 != 0, isMultiEntry: flags & 2 != 0, isCounted: flags & 4 != 0)
    }

    // MARK: Entries

    /// The entry keys (without the index's number) a stored object has in this index: one,
    /// or for a multi-entry index one per distinct element of the first field's array.
    package func tuples(of object: EncodedObject) -> [[UInt8]] {
        entries(of: object).map(\.tuple)
    }

    /// `tuples(of:)`, each with whether a field of it is missing or `null`: such an entry is
    /// not held to a unique index (as SQL's `NULL`s are not).
    package func entries(of object: EncodedObject, after prefix: [UInt8] = []) -> [(tuple: [UInt8], hasMissing: Bool)] {
        let scanner = object.scanner
        if !isMultiEntry {
            // One entry, written in one buffer: the common case of every write.
            var tuple = prefix
            tuple.reserveCapacity(prefix.count + 48)
            var hasMissing = false
            for field in fields { hasMissing = append(field, of: object, scanner: scanner, to: &tuple) || hasMissing }
            return [(tuple, hasMissing)]
        }
        var rest: [UInt8] = []
        var restHasMissing = false
        for field in fields.dropFirst() {
            restHasMissing = append(field, of: object, scanner: scanner, to: &rest) || restHasMissing
        }
        guard let first = fields.first else { return [(prefix + rest, restHasMissing)] }
        if let offset = Self.offset(of: first.path, in: object), scanner.byte(at: offset) == UInt8(ascii: "[") {
            var tuples: [[UInt8]: Bool] = [:]
            var element = scanner.firstElement(ofArrayAt: offset)
            while let current = element {
                var tuple: [UInt8] = []
                IndexKey.append(valueAt: current, in: scanner, kind: first.kind, to: &tuple)
                tuples[prefix + tuple + rest] = tuple == [IndexKey.missingTag] || restHasMissing
                element = scanner.nextElement(after: scanner.end(ofValueAt: current))
            }
            return tuples.sorted { $0.key.lexicographicallyPrecedes($1.key) }.map { ($0.key, $0.value) }
        }
        var tuple = prefix
        let missing = append(first, of: object, scanner: scanner, to: &tuple)
        return [(tuple + rest, missing || restHasMissing)]
    }

    /// Appends the field's encoding; returns whether it is missing or `null`.
    @discardableResult
    private func append(_ field: Field, of object: EncodedObject, scanner: JSONScanner, to key: inout [UInt8]) -> Bool {
        guard let offset = Self.offset(of: field.path, in: object) else {
            IndexKey.appendMissing(to: &key)
            return true
        }
        let start = key.count
        IndexKey.append(valueAt: offset, in: scanner, kind: field.kind, to: &key)
        return key.count == start + 1 && key[start] == IndexKey.missingTag
    }

    /// The offset of the value at `path`, or nil when a member on the way is missing or not an object.
    static func offset(of path: [String], in object: EncodedObject) -> Int? {
        var current = object
        var base = 0
        for (index, component) in path.enumerated() {
            guard let member = current.member(named: component, from: nil) else { return nil }
            if index == path.count - 1 { return base + member.value }
            guard current.scanner.byte(at: member.value) == UInt8(ascii: "{") else { return nil }
            base += member.value
            current = current.nestedObject(at: member.value)
        }
        return nil
    }
}

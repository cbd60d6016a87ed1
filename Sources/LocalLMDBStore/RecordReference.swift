import LocalLMDBLMDB
import LocalLMDBJSON

/// How a stored document refers to another record: an object whose member `"$ref"` holds the
/// other record's id as a string (`{"$ref":"ada"}`). The referenced record is stored on its
/// own, under its id, with its own class; the reference names nothing else.
///
/// An object with a `"$ref"` string member that is not a reference (a dictionary's key, say)
/// is read as a reference only by code that asks for one; the functions here, which find the
/// records a document may refer to, count it too: they may find more ids than the document's
/// references, never fewer.
package enum RecordReference {
    /// The member holding the referenced record's id.
    package static let member = "$ref"

    /// The id `object` refers to: its `"$ref"` member, when that is a string; nil otherwise.
    @inlinable package static func referencedID(of object: EncodedObject) -> String? {
        guard let found = object.member(named: member, from: nil) else { return nil }
        return object.scanner.string(at: found.value)?.value
    }

    /// Every id the document `object` may refer to (see the type's description), at any depth,
    /// each once (by its bytes: ids that differ only in Unicode normalization are two records),
    /// in the order met. Walks the document with a stack of its own, so a deeply nested document
    /// needs no deep call stack.
    package static func referencedIDs(in object: EncodedObject) -> [String] {
        let scanner = object.scanner
        var ids: [String] = []
        var listed = Set<ExactID>()
        var containers = [0]
        while let offset = containers.popLast() {
            if scanner.byte(at: offset) == UInt8(ascii: "[") {
                var next = scanner.firstElement(ofArrayAt: offset)
                while let element = next {
                    let end = scanner.end(ofValueAt: element)
                    if isContainer(scanner.byte(at: element)) { containers.append(element) }
                    next = scanner.nextElement(after: end)
                }
                continue
            }
            guard scanner.byte(at: offset) == UInt8(ascii: "{") else { continue }
            var next = scanner.firstMember(ofObjectAt: offset)
            while let start = next {
                let found = scanner.member(at: start)
                let end = scanner.end(ofValueAt: found.value)
                if isContainer(scanner.byte(at: found.value)) {
                    containers.append(found.value)
                } else if isReferenceKey(found, in: scanner), let id = scanner.string(at: found.value)?.value,
                          listed.insert(ExactID(id)).inserted {
                    ids.append(id)
                }
                // A member that ends nowhere (a broken invariant) ends the walk of its object.
                guard end > start else { break }
                next = scanner.nextMember(after: end)
            }
        }
        return ids
    }

    @inlinable static func isContainer(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[")
    }

    /// Whether `found`'s key is `"$ref"`, spelt plainly or with escapes.
    static func isReferenceKey(_ found: JSONScanner.Member, in scanner: JSONScanner) -> Bool {
        let key = scanner.bytes(found.key)
        guard found.keyHasEscapes else { return key.elementsEqual(member.utf8) }
        return JSONScanner.unescape(key) == member
    }
}

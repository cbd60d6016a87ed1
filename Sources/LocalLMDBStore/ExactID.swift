/// A record id that equals another only when their UTF-8 bytes do, as LMDB keys records.
///
/// Swift's `String` equality and hashing treat canonically equivalent strings as equal
/// (`"\u{E9}"` and `"e\u{301}"`), but those are two ids of two records: a set or dictionary of
/// ids that a write or read relies on to tell records apart keys them with `ExactID`.
package struct ExactID: Hashable, Sendable {
    package let id: String

    @inlinable package init(_ id: String) {
        self.id = id
    }

    @inlinable package static func == (left: ExactID, right: ExactID) -> Bool {
        left.id.utf8.count == right.id.utf8.count && left.id.utf8.elementsEqual(right.id.utf8)
    }

    @inlinable package func hash(into hasher: inout Hasher) {
        var id = id
        id.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}

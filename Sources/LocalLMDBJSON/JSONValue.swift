import LocalLMDBBase

/// A parsed JSON value. Integers that fit in 64 bits stay exact; other numbers are `Double`.
@usableFromInline package enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    /// A number kept as its JSON text, exactly: integers beyond 64 bits, `Decimal`s, `Float`s,
    /// and numbers read from a document that a `Double` would not reproduce (so editing a data
    /// object never rounds a number it did not touch). Always valid JSON number syntax.
    case number(String)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)
    /// A value that cannot be stored (`reason` says why): never written. Encoding for storage
    /// fails with `DatabaseError.unencodableValue` instead.
    case unencodable(reason: String)
}

/// A JSON object whose members keep their order.
///
/// Invariant: no two keys are equal as Swift `String`s (canonically equivalent spellings are
/// one key). `set` replaces in place, and readers keep the last of repeated keys (as most JSON
/// readers do), so a lookup can stop at the first match. Beyond `indexThreshold` members, keys
/// are also kept in a dictionary, so building a wide object is linear, not quadratic.
@usableFromInline package struct JSONObject: Sendable, Equatable {
    @usableFromInline package struct Member: Sendable, Equatable {
        @usableFromInline package var key: String
        @usableFromInline package var value: JSONValue

        @inlinable package init(key: String, value: JSONValue) {
            self.key = key
            self.value = value
        }
    }

    /// The members, in order. Change them through `set`, which keeps `index` in step; a change
    /// made here directly must reset `index` (no observer does: across the module boundary an
    /// observed property is changed by copying it, an allocation per change).
    @usableFromInline package var members: [Member] = []

    /// Member positions by key, built on demand for wide objects; nil when not built (or stale).
    @usableFromInline var index: [String: Int]?
    @usableFromInline static let indexThreshold = 16

    @inlinable package init(members: [Member] = []) {
        self.members = members
    }

    @inlinable package static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.members == rhs.members
    }

    /// The index of the member named `key`.
    @inlinable func index(of key: String) -> Int? {
        if let index { return index[key] }
        return members.firstIndex { $0.key == key }
    }

    /// The value of the member named `key`.
    @inlinable package subscript(key: String) -> JSONValue? {
        index(of: key).map { members[$0].value }
    }

    /// Replaces the value of `key` in place, or appends it.
    @inlinable package mutating func set(_ key: String, _ value: JSONValue) {
        if index == nil, members.count >= Self.indexThreshold {
            var built: [String: Int] = [:]
            built.reserveCapacity(members.count * 2)
            for (position, member) in members.enumerated() where built[member.key] == nil { built[member.key] = position }
            index = built
        }
        if var built = index {
            index = nil  // Keep the dictionary uniquely referenced while it changes.
            if let position = built[key] {
                members[position].value = value
            } else {
                built[key] = members.count
                members.append(Member(key: key, value: value))
            }
            index = built
        } else if let position = members.firstIndex(where: { $0.key == key }) {
            members[position].value = value
        } else {
            members.append(Member(key: key, value: value))
        }
    }
}

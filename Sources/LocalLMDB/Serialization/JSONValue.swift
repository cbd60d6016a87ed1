/// A parsed JSON value. Integers that fit in 64 bits stay exact; other numbers are `Double`.
enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)
}

/// A JSON object whose members keep their order.
///
/// Invariant: keys are unique. `set` replaces in place, and `JSONReader` keeps the last of
/// repeated keys (as most JSON readers do), so a lookup can stop at the first match.
struct JSONObject: Sendable, Equatable {
    struct Member: Sendable, Equatable {
        var key: String
        var value: JSONValue
    }

    var members: [Member] = []
    /// Where the next lookup starts: just past the last match. Fields are usually read in the
    /// order they were written, so most lookups match at once.
    private var hint = 0

    init(members: [Member] = []) {
        self.members = members
    }

    static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.members == rhs.members
    }

    /// The index of the member named `key`.
    func index(of key: String, from start: Int = 0) -> Int? {
        let count = members.count
        guard count > 0 else { return nil }
        var index = start < count ? start : 0
        for _ in 0..<count {
            if members[index].key == key { return index }
            index += 1
            if index == count { index = 0 }
        }
        return nil
    }

    /// The value of the member named `key`.
    subscript(key: String) -> JSONValue? {
        index(of: key).map { members[$0].value }
    }

    /// The value of the member named `key`, searching from where the last lookup matched.
    mutating func lookup(_ key: String) -> JSONValue? {
        guard let index = index(of: key, from: hint) else { return nil }
        hint = index + 1
        return members[index].value
    }

    /// Replaces the value of `key` in place, or appends it.
    mutating func set(_ key: String, _ value: JSONValue) {
        if let index = index(of: key) {
            members[index].value = value
        } else {
            members.append(Member(key: key, value: value))
        }
    }
}

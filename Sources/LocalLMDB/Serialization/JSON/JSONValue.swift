/// A parsed JSON value. Integers that fit in 64 bits stay exact; other numbers are `Double`.
enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)
    /// A value that cannot be stored (`reason` says why): never written. Encoding for storage
    /// fails with `LocalDatabaseError.unencodableValue` instead.
    case unencodable(reason: String)
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

    init(members: [Member] = []) {
        self.members = members
    }

    /// The index of the member named `key`.
    func index(of key: String) -> Int? {
        members.firstIndex { $0.key == key }
    }

    /// The value of the member named `key`.
    subscript(key: String) -> JSONValue? {
        index(of: key).map { members[$0].value }
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

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
/// Objects here are small (a stored class's fields), so lookups scan linearly; when a document
/// repeats a key, the last occurrence wins, as in most JSON readers.
struct JSONObject: Sendable, Equatable {
    struct Member: Sendable, Equatable {
        var key: String
        var value: JSONValue
    }

    var members: [Member] = []

    /// The value of the last member named `key`.
    subscript(key: String) -> JSONValue? {
        for member in members.reversed() where member.key == key {
            return member.value
        }
        return nil
    }

    /// Replaces the value of `key` in place, or appends it.
    mutating func set(_ key: String, _ value: JSONValue) {
        if let index = members.lastIndex(where: { $0.key == key }) {
            members[index].value = value
        } else {
            members.append(Member(key: key, value: value))
        }
    }
}

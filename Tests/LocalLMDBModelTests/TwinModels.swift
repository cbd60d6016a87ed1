import Foundation
import LocalLMDBModels

// The same models twice: `Typed` with the macros, `Plain` with synthesized `Codable` alone. Each
// pair is stored under one class name (the types' short names), so their records must be the
// same bytes.

enum Level: String, Codable, Equatable {
    case low, high
}

enum Typed {
    @StoredValue
    struct Address: Equatable {
        var street: String
        var city: String
        var postcode: String?
    }

    @StoredModel
    struct Badge: Equatable {
        var title: String
        var level: Int
    }

    @StoredModel
    struct Person {
        var name: String
        var age: Int
        var height: Double
        var active: Bool
        var born: Date
        var nickname: String?
        var rank: Int?
        var weight: Double?
        var flag: Bool?
        var lastSeen: Date?
        var tags: [String]
        var numbers: [Int]
        var ratios: [Double]
        var switches: [Bool]
        var maybeTags: [String]?
        var address: Address
        var oldAddress: Address?
        var addresses: [Address]
        var badge: Badge
        var badges: [Badge]?
        var scores: [String: Int]
        var level: Level
        var id: UUID
        var homepage: URL?
        var balance: Decimal
        var avatar: Data
        var small: Int8
        var huge: UInt64
        var ratio: Float
        var object: String
        var renamed: String
        var nested: [[Int?]]

        enum CodingKeys: String, CodingKey {
            case name, age, height, active, born, nickname, rank, weight, flag, lastSeen, tags, numbers, ratios, switches
            case maybeTags, address, oldAddress, addresses, badge, badges, scores, level, id, homepage, balance, avatar
            case small, huge, ratio, object
            case renamed = "re named\u{0}\"key"
            case nested
        }
    }
}

enum Plain {
    struct Address: Codable, Equatable {
        var street: String
        var city: String
        var postcode: String?
    }

    struct Badge: Codable, Persistable, Equatable {
        var title: String
        var level: Int
    }

    struct Person: Codable, Persistable {
        var name: String
        var age: Int
        var height: Double
        var active: Bool
        var born: Date
        var nickname: String?
        var rank: Int?
        var weight: Double?
        var flag: Bool?
        var lastSeen: Date?
        var tags: [String]
        var numbers: [Int]
        var ratios: [Double]
        var switches: [Bool]
        var maybeTags: [String]?
        var address: Address
        var oldAddress: Address?
        var addresses: [Address]
        var badge: Badge
        var badges: [Badge]?
        var scores: [String: Int]
        var level: Level
        var id: UUID
        var homepage: URL?
        var balance: Decimal
        var avatar: Data
        var small: Int8
        var huge: UInt64
        var ratio: Float
        var object: String
        var renamed: String
        var nested: [[Int?]]

        enum CodingKeys: String, CodingKey {
            case name, age, height, active, born, nickname, rank, weight, flag, lastSeen, tags, numbers, ratios, switches
            case maybeTags, address, oldAddress, addresses, badge, badges, scores, level, id, homepage, balance, avatar
            case small, huge, ratio, object
            case renamed = "re named\u{0}\"key"
            case nested
        }
    }
}

typealias MaybeText = String?

/// What the declaration's spelling hides from the macro: an optional behind a type alias or in
/// parentheses, `CodingKeys` in another order than the properties, a default declared before
/// properties without one, a keyword as a name, a property left out by `@NotStored`.
enum TypedEdges {
    @StoredModel
    struct Edge: Equatable {
        var level: Int = 7
        var first: String
        var note: MaybeText
        var count: (Int?)
        var `default`: Int
        var tail: [Int]?

        enum CodingKeys: String, CodingKey {
            case tail, `default`, note, count
            case first = "1st"
            case level
        }
    }

    @StoredModel
    struct Sparse: Equatable {
        var `class`: String = "c"
        var kept: Int
        @NotStored var scratch: [Int] = []
    }
}

enum PlainEdges {
    struct Edge: Codable, Persistable, Equatable {
        var level: Int = 7
        var first: String
        var note: MaybeText
        var count: (Int?)
        var `default`: Int
        var tail: [Int]?

        enum CodingKeys: String, CodingKey {
            case tail, `default`, note, count
            case first = "1st"
            case level
        }
    }

    struct Sparse: Codable, Persistable, Equatable {
        var `class`: String = "c"
        var kept: Int

        enum CodingKeys: String, CodingKey {
            case `class`, kept
        }
    }
}

import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import LocalLMDBTestSupport
import Testing

// MARK: Models

struct CbErrItem: Codable {
    var name: String
    var count: Int
}

struct CbErrAddress: Codable {
    var street: String
    var zip: String
}

struct CbErrPerson: Codable, Persistable {
    var name: String
    var age: Int
    var small: UInt8
    var address: CbErrAddress
    var items: [CbErrItem]
    var nickname: String?
}

struct CbErrMember: Codable, Persistable {
    var name: String
}

struct CbErrOther: Codable, Persistable {
    var x: Int
}

struct CbErrTeam: Codable, Persistable {
    var lead: CbErrMember
    var members: [CbErrMember]
}

enum CbOwnError: Error, CustomStringConvertible {
    case refused(String)
    var description: String {
        switch self {
        case let .refused(why): return "refused: \(why)"
        }
    }
}

struct CbThrowsOnDecode: Codable, Persistable {
    var value: Int
    init(value: Int) { self.value = value }
    init(from decoder: any Decoder) throws { throw CbOwnError.refused("by init(from:)") }
}

/// Throws from `encode(to:)` when `fail` is set: its own error, or an `EncodingError` at a path.
struct CbThrowsOnEncode: Codable, Persistable {
    enum Failure: Codable { case none, own, atPath }
    var value: Int
    var fail: Failure

    enum CodingKeys: String, CodingKey { case value, fail }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(value, forKey: .value)
        switch fail {
        case .none: try container.encode(fail, forKey: .fail)
        case .own: throw CbOwnError.refused("by encode(to:)")
        case .atPath:
            throw EncodingError.invalidValue(value, .init(codingPath: container.codingPath + [CodingKeys.value], debugDescription: "value refused"))
        }
    }
}

/// Throws an `EncodingError` naming its own encoder's coding path.
struct CbBadInner: Codable {
    var x: Int
    func encode(to encoder: any Encoder) throws {
        throw EncodingError.invalidValue(x, .init(codingPath: encoder.codingPath, debugDescription: "inner refused"))
    }
}

/// The same, as a model of its own (stored with its class name when nested).
struct CbBadInnerModel: Codable, Persistable {
    var x: Int
    func encode(to encoder: any Encoder) throws {
        throw EncodingError.invalidValue(x, .init(codingPath: encoder.codingPath, debugDescription: "inner model refused"))
    }
}

struct CbHoldsBadInner: Codable, Persistable {
    var inner: CbBadInner
}

struct CbHoldsBadInnerModel: Codable, Persistable {
    var inner: CbBadInnerModel
}

struct CbDated: Codable, Persistable {
    var when: Date
    var dates: [Date]
}

struct CbHoldsDated: Codable {
    var dated: [String: Date]
}

struct CbDatedOuter: Codable, Persistable {
    var inner: CbHoldsDated
}

/// Asks one encoder for a keyed container and then an unkeyed one.
struct CbTwoContainers: Codable, Persistable {
    var value: Int
    enum CodingKeys: String, CodingKey { case value }
    func encode(to encoder: any Encoder) throws {
        var keyed = encoder.container(keyedBy: CodingKeys.self)
        try keyed.encode(value, forKey: .value)
        var unkeyed = encoder.unkeyedContainer()
        try unkeyed.encode(value)
    }
}

/// The same, one level down (a nested value's encoder asked for a single value then a keyed container).
struct CbTwoContainersInner: Codable {
    func encode(to encoder: any Encoder) throws {
        var single = encoder.singleValueContainer()
        try single.encode(1)
        var keyed = encoder.container(keyedBy: CbTwoContainers.CodingKeys.self)
        try keyed.encode(2, forKey: .value)
    }
    init() {}
    init(from decoder: any Decoder) throws {}
}

struct CbHoldsTwoContainers: Codable, Persistable {
    var inner = CbTwoContainersInner()
}

/// A model that is a single value at the top level.
enum CbTopLevelEnum: String, Codable, Persistable {
    case only
}

/// A model that is an array at the top level.
struct CbTopLevelArray: Codable, Persistable {
    var values: [Int]
    init(values: [Int]) { self.values = values }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.unkeyedContainer()
        for value in values { try container.encode(value) }
    }
    init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        var values: [Int] = []
        while !container.isAtEnd { values.append(try container.decode(Int.self)) }
        self.values = values
    }
}

/// A model whose decoding asks for an array at the top level, though it is stored as an object.
struct CbReadsTopLevelArray: Codable, Persistable {
    var value: Int
    init(value: Int) { self.value = value }
    init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        value = try container.decode(Int.self)
    }
}

/// A second version of a model, with a field added: read with a default where old records lack it.
struct CbProfileV2: Codable, Persistable {
    var name: String
    var theme: String

    enum CodingKeys: String, CodingKey { case name, theme }

    init(name: String, theme: String) {
        self.name = name
        self.theme = theme
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        theme = try container.decodeIfPresent(String.self, forKey: .theme) ?? "light"
    }
}

/// The same change with synthesized decoding: the new field is required.
struct CbProfileV3: Codable, Persistable {
    var name: String
    var theme: String
}

// MARK: Tests

struct CbDecodingCase: Sendable, CustomTestStringConvertible {
    let name: String
    let json: String
    let path: String
    var testDescription: String { name }
}

private let valid =
    #"{"object":"CbErrPerson","name":"n","age":1,"small":2,"address":{"street":"s","zip":"z"},"items":[{"name":"a","count":1},{"name":"b","count":2}]}"#

/// `valid` with `old` replaced by `new` (which must occur once).
private func variant(_ name: String, _ old: String, _ new: String, path: String) -> CbDecodingCase {
    precondition(valid.components(separatedBy: old).count == 2, old)
    return CbDecodingCase(name: name, json: valid.replacingOccurrences(of: old, with: new), path: path)
}

private let decodingCases: [CbDecodingCase] = [
    variant("missing top-level field", #""age":1,"#, "", path: "age"),
    variant("missing nested field", #","zip":"z""#, "", path: "address.zip"),
    variant("missing field of an array element", #""name":"b","#, "", path: "items[1].name"),
    variant("missing nested object", #""address":{"street":"s","zip":"z"},"#, "", path: "address"),
    variant("string for an Int", #""age":1"#, #""age":"old""#, path: "age"),
    variant("null for an Int", #""age":1"#, #""age":null"#, path: "age"),
    variant("null for a nested object", #""address":{"street":"s","zip":"z"}"#, #""address":null"#, path: "address"),
    variant("300 for a UInt8", #""small":2"#, #""small":300"#, path: "small"),
    variant("-1 for a UInt8", #""small":2"#, #""small":-1"#, path: "small"),
    variant("a fraction for an Int in an array element", #""count":2"#, #""count":1.5"#, path: "items[1].count"),
    variant("an array for an object", #""address":{"street":"s","zip":"z"}"#, #""address":["s","z"]"#, path: "address"),
    variant("an object for an array", #""items":[{"name":"a","count":1},{"name":"b","count":2}]"#, #""items":{}"#, path: "items"),
    variant("null element of an array", #"{"name":"a","count":1}"#, "null", path: "items[0]"),
    variant("a number for a String", #""name":"n""#, #""name":5"#, path: "name"),
    variant("a Bool for a String in a nested object", #""street":"s""#, #""street":true"#, path: "address.street"),
    variant("a number for an optional String", #""items""#, #""nickname":5,"items""#, path: "nickname"),
]

@Suite("Codable errors")
struct CodableErrorTests {
    @Test(arguments: decodingCases)
    func aRecordThatDoesNotDecodeNamesIDClassAndPath(_ decodingCase: CbDecodingCase) async throws {
        try await withBothFaces { database, sync in
            try await database.write(Record(id: "good", data: CbRawRecord(valid)))
            #expect(try await database.read(id: "good") as CbErrPerson? != nil, "the valid form decodes")
            try await database.write(Record(id: "e", data: CbRawRecord(decodingCase.json)))
            let error = await caughtError { _ = try await database.read(id: "e") as CbErrPerson? }
            let failure = try #require(error?.decodingFailure, "\(String(describing: error))")
            #expect(failure.id == "e" && failure.className == "CbErrPerson")
            #expect(failure.path == decodingCase.path, "\(failure.reason)")
            #expect(!failure.reason.isEmpty)
            // Reading every record fails the same way; the synchronous face returns nil and keeps the error.
            let allError = await caughtError { _ = try await database.read() as [CbErrPerson] }
            #expect(allError?.decodingFailure?.path == decodingCase.path && allError?.decodingFailure?.id == "e")
            #expect(sync.read(id: "e") as CbErrPerson? == nil)
            #expect(sync.lastError?.decodingFailure?.path == decodingCase.path)
            #expect((sync.read() as [CbErrPerson]).isEmpty)
            // Nothing was changed.
            #expect(try await database.count(CbErrPerson.self) == 2)
        }
    }

    @Test func aNestedModelsMissingFieldIsNamedByItsFullPath() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "t", data: CbRawRecord(#"{"object":"CbErrTeam","lead":{"object":"CbErrMember"},"members":[]}"#)))
            let error = await caughtError { _ = try await database.read(id: "t") as CbErrTeam? }
            #expect(error?.decodingFailure?.id == "t" && error?.decodingFailure?.className == "CbErrTeam")
            #expect(error?.decodingFailure?.path.hasSuffix("name") == true)
            #expect(error?.decodingFailure?.path == "lead.name", "\(String(describing: error))")
            let json = #"{"object":"CbErrTeam","lead":{"object":"CbErrMember","name":"l"},"members":[{"object":"CbErrMember","name":"a"},{"object":"CbErrMember"}]}"#
            try await database.write(Record(id: "m", data: CbRawRecord(json)))
            let memberError = await caughtError { _ = try await database.read(id: "m") as CbErrTeam? }
            #expect(memberError?.decodingFailure?.id == "m")
            #expect(memberError?.decodingFailure?.path == "members[1].name", "\(String(describing: memberError))")
        }
    }

    @Test func aNestedObjectOfAnUnrelatedClassIsATypeMismatch() async throws {
        try await withBothFaces { database, sync in
            try await database.write(Record(id: "other", data: CbErrOther(x: 1)))
            let json = #"{"object":"CbErrTeam","lead":{"object":"CbErrOther","x":1},"members":[]}"#
            try await database.write(Record(id: "t", data: CbRawRecord(json)))
            await expectError({ $0 == .typeMismatch(id: "t", requested: "CbErrMember", stored: "CbErrOther") }) {
                _ = try await database.read(id: "t") as CbErrTeam?
            }
            #expect(sync.read(id: "t") as CbErrTeam? == nil)
            #expect(sync.lastError == .typeMismatch(id: "t", requested: "CbErrMember", stored: "CbErrOther"))
            let inArray = #"{"object":"CbErrTeam","lead":{"object":"CbErrMember","name":"l"},"members":[{"object":"CbErrOther","x":2}]}"#
            try await database.write(Record(id: "a", data: CbRawRecord(inArray)))
            await expectError({ $0 == .typeMismatch(id: "a", requested: "CbErrMember", stored: "CbErrOther") }) {
                _ = try await database.read(id: "a") as CbErrTeam?
            }
            // The whole record of another class.
            await expectError({ $0 == .typeMismatch(id: "other", requested: "CbErrTeam", stored: "CbErrOther") }) {
                _ = try await database.read(id: "other") as CbErrTeam?
            }
        }
    }

    @Test func anErrorThrownByInitFromIsReported() async throws {
        try await withBothFaces { database, sync in
            try await database.write(Record(id: "d", data: CbThrowsOnDecode(value: 1)))
            let error = await caughtError { _ = try await database.read(id: "d") as CbThrowsOnDecode? }
            let failure = try #require(error?.decodingFailure)
            #expect(failure.id == "d" && failure.className == "CbThrowsOnDecode" && failure.path == "")
            #expect(failure.reason.contains("refused: by init(from:)"), "\(failure.reason)")
            #expect(sync.read(id: "d") as CbThrowsOnDecode? == nil)
            #expect(sync.lastError?.decodingFailure?.reason.contains("refused: by init(from:)") == true)
        }
    }

    @Test func aMissingSuperMemberIsReportedAtSuper() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "whole", data: CbCircle(name: "whole", radius: 2)))  // the database knows CbCircle
            try await database.write(Record(id: "c", data: CbRawRecord(#"{"object":"CbCircle","radius":1}"#)))
            let error = await caughtError { _ = try await database.read(id: "c") as CbShape? }
            let failure = try #require(error?.decodingFailure, "\(String(describing: error))")
            #expect(failure.id == "c" && failure.className == "CbCircle")
            #expect(failure.path.hasPrefix("super"), "\(failure.path): \(failure.reason)")
        }
    }

    @Test func anEncodeThatThrowsWritesNothing() async throws {
        try await withBothFaces { database, sync in
            try await database.write(Record(id: "keep", data: CbThrowsOnEncode(value: 1, fail: .none)))
            let own = await caughtError { try await database.write(Record(id: "x", data: CbThrowsOnEncode(value: 2, fail: .own))) }
            let ownFailure = try #require(own?.unencodable, "\(String(describing: own))")
            #expect(ownFailure.id == "x" && ownFailure.path == "")
            #expect(ownFailure.reason.contains("refused: by encode(to:)"), "\(ownFailure.reason)")
            let atPath = await caughtError { try await database.write(Record(id: "y", data: CbThrowsOnEncode(value: 3, fail: .atPath))) }
            #expect(atPath?.unencodable?.id == "y" && atPath?.unencodable?.path == "value" && atPath?.unencodable?.reason == "value refused")
            // Replacing a record with one that fails leaves the old one.
            await expectError({ $0.unencodable?.id == "keep" }) {
                try await database.write(Record(id: "keep", data: CbThrowsOnEncode(value: 9, fail: .own)))
            }
            #expect(try await database.read(id: "keep") as CbThrowsOnEncode? != nil)
            #expect(try await database.count() == 1)

            // A batch is all or nothing, on both faces.
            let batch = [
                Record(id: "b1", data: CbThrowsOnEncode(value: 1, fail: .none)), Record(id: "b2", data: CbThrowsOnEncode(value: 2, fail: .own)),
                Record(id: "b3", data: CbThrowsOnEncode(value: 3, fail: .none)),
            ]
            await expectError({ $0.unencodable?.id == "b2" }) { try await database.write(contentsOf: batch) }
            #expect(sync.write(contentsOf: batch) == 0)
            #expect(sync.lastError?.unencodable?.id == "b2")
            #expect(!sync.write(Record(id: "z", data: CbThrowsOnEncode(value: 2, fail: .atPath))))
            #expect(sync.lastError?.unencodable?.path == "value")
            #expect(try await database.count() == 1)
            #expect(try await database.readIDs(CbThrowsOnEncode.self) == ["keep"])

            // Inside a transaction, the failed write is undone alone.
            try await database.startTransaction()
            try await database.write(Record(id: "t1", data: CbThrowsOnEncode(value: 1, fail: .none)))
            await expectError({ $0.unencodable?.id == "t2" }) {
                try await database.write(contentsOf: [Record(id: "t1b", data: CbThrowsOnEncode(value: 1, fail: .none)), Record(id: "t2", data: CbThrowsOnEncode(value: 2, fail: .own))])
            }
            try await database.commitTransaction()
            #expect(try await database.readIDs(CbThrowsOnEncode.self) == ["keep", "t1"])
        }
    }

    @Test func anEncodingErrorOfANestedValueNamesItsFullPath() async throws {
        try await withDatabase { (database, _) async throws in
            let plain = await caughtError { try await database.write(Record(id: "p", data: CbHoldsBadInner(inner: CbBadInner(x: 1)))) }
            #expect(plain?.unencodable?.path == "inner", "\(String(describing: plain))")
            let model = await caughtError { try await database.write(Record(id: "m", data: CbHoldsBadInnerModel(inner: CbBadInnerModel(x: 1)))) }
            #expect(model?.unencodable?.reason == "inner model refused", "\(String(describing: model))")
            #expect(model?.unencodable?.path == "inner", "\(String(describing: model))")
            #expect(try await database.count() == 0)
        }
    }

    @Test func aDateThatCannotBeStoredIsRefusedAtItsPath() async throws {
        try await withBothFaces { (database, sync) async throws in
            let infinite = Date(timeIntervalSince1970: .infinity)
            let top = await caughtError { try await database.write(Record(id: "a", data: CbDated(when: infinite, dates: []))) }
            #expect(top?.unencodable?.id == "a" && top?.unencodable?.path == "when", "\(String(describing: top))")
            let element = await caughtError {
                try await database.write(Record(id: "b", data: CbDated(when: Date(), dates: [Date(), Date(timeIntervalSince1970: .nan)])))
            }
            #expect(element?.unencodable?.path == "dates[1]", "\(String(describing: element))")
            let nested = await caughtError {
                try await database.write(Record(id: "c", data: CbDatedOuter(inner: CbHoldsDated(dated: ["far": Date(timeIntervalSince1970: 1e300)]))))
            }
            #expect(nested?.unencodable?.path == "inner.dated.far", "\(String(describing: nested))")
            #expect(!sync.write(Record(id: "d", data: CbDated(when: Date(timeIntervalSince1970: -.infinity), dates: []))))
            #expect(sync.lastError?.unencodable?.path == "when")
            #expect(try await database.count() == 0)
        }
    }

    /// The path names fields by their keys: a field named `object` is `object` in errors (it is
    /// stored as the member `~object`, which is not a key of the model).
    @Test func anErrorInAFieldNamedObjectNamesTheField() async throws {
        struct CbObjectDate: Codable, Persistable {
            var object: Date
        }
        try await withDatabase { database, _ in
            try await database.write(Record(id: "r", data: CbRawRecord(#"{"object":"CbObjectDate","~object":"soon"}"#)))
            let read = await caughtError { _ = try await database.read(id: "r") as CbObjectDate? }
            #expect(read?.decodingFailure?.path == "object", "\(String(describing: read))")
            let write = await caughtError { try await database.write(Record(id: "w", data: CbObjectDate(object: Date(timeIntervalSince1970: .infinity)))) }
            #expect(write?.unencodable?.id == "w")
            #expect(write?.unencodable?.path == "object", "\(String(describing: write))")
        }
    }

    @Test func askingOneEncoderForTwoKindsOfContainerIsAnErrorNotACrash() async throws {
        try await withDatabase { (database, _) async throws in
            let top = await caughtError { try await database.write(Record(id: "a", data: CbTwoContainers(value: 1))) }
            #expect(top?.unencodable?.id == "a", "\(String(describing: top))")
            let nested = await caughtError { try await database.write(Record(id: "b", data: CbHoldsTwoContainers())) }
            #expect(nested?.unencodable?.id == "b", "\(String(describing: nested))")
            #expect(nested?.unencodable?.path == "inner", "\(String(describing: nested))")
            #expect(try await database.count() == 0)
        }
    }

    @Test func aModelThatIsNotAnObjectAtTheTopLevelIsRefused() async throws {
        try await withBothFaces { database, sync in
            let single = await caughtError { try await database.write(Record(id: "e", data: CbTopLevelEnum.only)) }
            #expect(single?.unencodable?.id == "e", "\(String(describing: single))")
            let array = await caughtError { try await database.write(Record(id: "a", data: CbTopLevelArray(values: [1, 2]))) }
            #expect(array?.unencodable?.id == "a", "\(String(describing: array))")
            #expect(!sync.write(Record(id: "e", data: CbTopLevelEnum.only)))
            #expect(sync.lastError?.unencodable?.id == "e")
            #expect(try await database.count() == 0)
            // Decoding that asks for an array where an object is stored.
            try await database.write(Record(id: "r", data: CbRawRecord(#"{"object":"CbReadsTopLevelArray","value":1}"#)))
            let read = await caughtError { _ = try await database.read(id: "r") as CbReadsTopLevelArray? }
            #expect(read?.decodingFailure?.id == "r" && read?.decodingFailure?.className == "CbReadsTopLevelArray", "\(String(describing: read))")
        }
    }

    /// A field added with `decodeIfPresent(…) ?? default` reads records written before it existed;
    /// with synthesized decoding the new field is required, and old records fail naming it.
    @Test func aFieldAddedWithADefaultReadsOldRecords() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "old2", data: CbRawRecord(#"{"object":"CbProfileV2","name":"Ada"}"#)))
            try await database.write(Record(id: "new2", data: CbProfileV2(name: "Bob", theme: "dark")))
            let old = try #require(try await database.read(id: "old2") as CbProfileV2?)
            #expect(old.name == "Ada" && old.theme == "light")
            let new = try #require(try await database.read(id: "new2") as CbProfileV2?)
            #expect(new.theme == "dark")
            #expect((try await database.read() as [CbProfileV2]).map(\.theme) == ["dark", "light"])

            try await database.write(Record(id: "old3", data: CbRawRecord(#"{"object":"CbProfileV3","name":"Ada"}"#)))
            await expectError({ $0.decodingFailure?.path == "theme" && $0.decodingFailure?.className == "CbProfileV3" }) {
                _ = try await database.read(id: "old3") as CbProfileV3?
            }
            // A field that is gone from the model is ignored in old records.
            try await database.write(Record(id: "extra", data: CbRawRecord(#"{"object":"CbProfileV3","name":"A","theme":"t","removed":[1,{"x":2}]}"#)))
            #expect(try await database.read(id: "extra") as CbProfileV3? != nil)
        }
    }
}

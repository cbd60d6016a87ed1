import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import LocalLMDBTestSupport
import Testing

// Codable models through every operation of both faces, ids, and decoders kept too long.
extension CodableModelTests {
    @Test func everyOperationOfLocalDatabaseWorks() async throws {
        try await withDatabase { database, _ in
            #expect(try await database.write(Record(id: "ada", data: Self.ada)))
            #expect(try await database.write(contentsOf: [Record(id: "bob", data: Self.bob), Record(id: "cy", data: Self.bob)]) == 2)
            try await database.write(Record(id: "note", data: Note(text: "hand-written")))
            #expect(try await database.read(id: "ada") == Self.ada)
            #expect(try await database.read(id: "missing") as CbPerson? == nil)
            #expect(try await database.read() == [Self.ada, Self.bob, Self.bob])
            #expect(try await database.readIDs(CbPerson.self) == ["ada", "bob", "cy"])
            #expect(try await database.count(CbPerson.self) == 3)
            #expect(try await database.count() == 4)
            #expect(try await database.delete(id: "cy"))
            #expect(!(try await database.delete(id: "cy")))
            #expect(try await database.delete(CbPerson.self) == 2)
            #expect(try await database.count(CbPerson.self) == 0)
            #expect(try await database.readIDs(Note.self) == ["note"])
            // Replacing a record of another class with a Codable model.
            try await database.write(Record(id: "note", data: Self.ada))
            #expect(try await database.count(Note.self) == 0)
            #expect(try await database.read(id: "note") == Self.ada)
            #expect(try await database.clearDatabase() == 1)
            #expect(try await database.count() == 0)
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }

    @Test func everyOperationOfSerializationDatabaseWorks() async throws {
        try await withTemporaryDirectory { directory in
            let database = try SerializationDatabase(directory: directory)
            #expect(database.write(Record(id: "ada", data: Self.ada)))
            #expect(database.write(contentsOf: [Record(id: "bob", data: Self.bob)]) == 1)
            #expect(database.read(id: "ada") == Self.ada)
            #expect(database.read() == [Self.ada, Self.bob])
            #expect(database.readIDs(CbPerson.self) == ["ada", "bob"])
            #expect(database.count(CbPerson.self) == 2 && database.count() == 2)
            #expect(database.delete(id: "bob"))
            #expect(database.delete(CbPerson.self) == 1)
            #expect(database.startTransaction())
            #expect(database.write(Record(id: "t", data: Self.bob)))
            #expect(database.read(id: "t") == Self.bob)
            #expect(database.rollbackTransaction())
            #expect(database.read(id: "t") as CbPerson? == nil)
            #expect(database.startTransaction())
            #expect(database.write(Record(id: "t", data: Self.bob)))
            #expect(database.commitTransaction())
            #expect(database.read(id: "t") == Self.bob)
            #expect(database.clearDatabase() == 1)
            #expect(database.lastError == nil)
        }
    }

    @Test func transactionsCommitAndRollBackCodableWrites() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "ada", data: Self.ada))
            try await database.startTransaction()
            try await database.write(Record(id: "bob", data: Self.bob))
            var older = Self.ada
            older.age = 37
            try await database.write(Record(id: "ada", data: older))
            #expect(try await database.read(id: "bob") == Self.bob)
            #expect(try await database.read(id: "ada") == older)
            #expect(try await database.count(CbPerson.self) == 2)
            #expect(try await database.read() == [older, Self.bob])
            try await database.rollbackTransaction()
            #expect(try await database.read(id: "bob") as CbPerson? == nil)
            #expect(try await database.read(id: "ada") == Self.ada)

            // A class first written inside a transaction, nested: resolved inside it, gone with it.
            try await database.startTransaction()
            let drawing = CbDrawing(title: "t", main: CbSquare(name: "s", side: 1), shapes: [CbCircle(name: "c", radius: 2)], optionalShape: nil, byName: [:])
            try await database.write(Record(id: "drawing", data: drawing))
            let inside = try #require(try await database.read(id: "drawing") as CbDrawing?)
            #expect((inside.shapes.first as? CbCircle)?.radius == 2 && (inside.main as? CbSquare)?.side == 1)
            try await database.rollbackTransaction()
            #expect(try await database.read(id: "drawing") as CbDrawing? == nil)
            #expect(try await database.count() == 1)

            try await database.startTransaction()
            try await database.write(contentsOf: [Record(id: "bob", data: Self.bob), Record(id: "ada", data: older)])
            #expect(try await database.delete(id: "bob"))
            try await database.write(Record(id: "bob2", data: Self.bob))
            try await database.commitTransaction()
            #expect(try await database.readIDs(CbPerson.self) == ["ada", "bob2"])
            #expect(try await database.read(id: "ada") == older)
        }
    }

    @Test func aRenamedCodableTypeReadsRecordsStoredUnderItsOldName() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "old", data: CbLegacyOld(title: "first")))
            try await database.write(Record(id: "new", data: CbLegacyNew(title: "second", extra: 2)))
            Legacy.addClassRefactor(old: "CbLegacyOld", new: "CbLegacyNew")
            defer { Legacy.removeClassRefactor(old: "CbLegacyOld") }
            let old = try #require(try await database.read(id: "old") as CbLegacyNew?)
            #expect(old.title == "first" && old.extra == nil)
            let all: [CbLegacyNew] = try await database.read()
            #expect(all.map(\.title) == ["second", "first"])
            #expect(try await database.readIDs(CbLegacyNew.self) == ["new", "old"])
            #expect(try await database.count(CbLegacyNew.self) == 2)
            #expect(try await database.delete(CbLegacyNew.self) == 2)
            #expect(try await database.count() == 0)
        }
    }

    @Test func identifiableModelsNeedNoRecordOnEitherFace() async throws {
        try await withBothFaces { (database, sync) async throws in
            // String ids.
            #expect(try await database.write(Self.ada))
            #expect(try await database.write(contentsOf: [Self.bob]) == 1)
            #expect(try await database.read(CbPerson.self, id: "ada") == Self.ada)
            #expect(try await database.read(id: "bob") == Self.bob)
            #expect(sync.read(CbPerson.self, id: "bob") == Self.bob)
            #expect(try await database.delete(Self.ada))
            #expect(!(try await database.delete(Self.ada)))
            #expect(sync.delete(Self.bob))
            #expect(Record(Self.ada).id == "ada")

            // Int ids: the decimal digits.
            let numbered = [CbIntKeyed(id: 42, text: "a"), CbIntKeyed(id: -7, text: "b"), CbIntKeyed(id: Int.min, text: "c")]
            #expect(try await database.write(contentsOf: numbered) == 3)
            #expect(try await database.read(CbIntKeyed.self, id: -7) == numbered[1])
            #expect(try await database.read(id: "42") == numbered[0])
            #expect(sync.read(CbIntKeyed.self, id: Int.min) == numbered[2])
            #expect(Set(try await database.readIDs(CbIntKeyed.self)) == ["42", "-7", String(Int.min)])
            #expect(sync.write(CbIntKeyed(id: 42, text: "replaced")))
            #expect(try await database.read(CbIntKeyed.self, id: 42)?.text == "replaced")
            #expect(try await database.delete(numbered[0]))
            #expect(sync.write(contentsOf: [CbIntKeyed(id: 1, text: "x")]) == 1)
            #expect(try await database.count(CbIntKeyed.self) == 3)

            // Later models win over earlier ones with the same id.
            #expect(try await database.write(contentsOf: [CbIntKeyed(id: 5, text: "first"), CbIntKeyed(id: 5, text: "second")]) == 2)
            #expect(try await database.read(CbIntKeyed.self, id: 5)?.text == "second")
            #expect(try await database.count(CbIntKeyed.self) == 4)

            // UUID ids: the uuidString.
            let uuid = UUID()
            let keyed = CbUUIDKeyed(id: uuid, text: "u")
            #expect(sync.write(keyed))
            #expect(try await database.read(CbUUIDKeyed.self, id: uuid) == keyed)
            #expect(try await database.read(id: uuid.uuidString) == keyed)
            #expect(sync.delete(keyed))
            #expect(try await database.read(CbUUIDKeyed.self, id: uuid) == nil)

            // UInt64 ids beyond Int64.
            let big = CbUInt64Keyed(id: .max, text: "big")
            #expect(try await database.write(big))
            #expect(try await database.read(id: "18446744073709551615") == big)
        }
    }

    @Test func keysChosenAtRunTimeAreReadInAnyOrder() async throws {
        let model = CbDynamicModel(values: ["object": "o", "~object": "t", "": "empty", "z": "last", "a": "first", "ключ": "к"])
        let text = try #require(try model._storedFields().toRawString())
        #expect(jsonTree(text) == ["object": "CbDynamicModel", "~object": "o", "~~object": "t", "": "empty", "z": "last", "a": "first", "ключ": "к"] as NSDictionary)
        try await withDatabase { database, _ in
            try await database.write(Record(id: "d", data: model))
            #expect(try await database.read(id: "d") == model)
        }
    }

    @Test func readingPastTheEndOfAnArrayNamesTheElement() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "p", data: CbRawRecord(#"{"object":"CbReadsPastTheEnd","items":[1,2,3]}"#)))
            let error = await caughtError { _ = try await database.read(id: "p") as CbReadsPastTheEnd? }
            #expect(error?.decodingFailure?.path == "items[3]", "\(String(describing: error))")
        }
    }

    @Test func aModelWithNoFieldsIsJustItsClassName() async throws {
        #expect(try CbEmptyModel()._storedFields().toRawString() == #"{"object":"CbEmptyModel"}"#)
        try await withBothFaces { database, sync in
            try await database.write(contentsOf: [Record(id: "1", data: CbEmptyModel()), Record(id: "2", data: CbEmptyModel())])
            #expect(try await database.read() == [CbEmptyModel(), CbEmptyModel()])
            #expect(sync.count(CbEmptyModel.self) == 2)
        }
    }

    /// Two `Codable` types with one short name are never merged: the second to be used in a
    /// database gets `classNameConflict`.
    @Test func twoCodableTypesWithOneShortNameConflict() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "a", data: CbSpaceA.CbItem(a: 1)))
            await expectError({ $0.isClassNameConflict }) { try await database.write(Record(id: "b", data: CbSpaceB.CbItem(b: 2))) }
            await expectError({ $0.isClassNameConflict }) { _ = try await database.read(id: "a") as CbSpaceB.CbItem? }
            #expect((try await database.read(id: "a") as CbSpaceA.CbItem?)?.a == 1)
            #expect(try await database.count() == 1)
        }
    }

    @Test func everyIdentifierTypeGivesItsRecordID() async throws {
        try await withBothFaces { database, sync in
            try await database.write(CbIDModel(id: Int32.min))
            try await database.write(CbIDModel(id: Int64.max))
            try await database.write(CbIDModel(id: UInt.max))
            #expect(sync.write(CbIDModel(id: UInt32.max)))
            #expect(sync.write(CbIDModel(id: "string-id")))
            #expect(try await database.read(CbIDModel<Int32>.self, id: .min) == CbIDModel(id: Int32.min))
            #expect(try await database.read(id: String(Int64.max)) == CbIDModel(id: Int64.max))
            #expect(sync.read(CbIDModel<UInt>.self, id: .max) == CbIDModel(id: UInt.max))
            #expect(try await database.read(id: "4294967295") == CbIDModel(id: UInt32.max))
            #expect(try await database.read(CbIDModel<String>.self, id: "string-id") == CbIDModel(id: "string-id"))
            #expect("sub-string-id".dropFirst(4).recordID == "string-id")
            #expect(try await database.count() == 5)
        }
    }

    /// These decoders read the record in place, from LMDB's map, valid only during the read:
    /// a decoder or container kept past `init(from:)` refuses to read (a clean `DecodingError`)
    /// rather than read whatever those bytes hold by then.
    @Test func aDecoderKeptPastInitFromRefusesToReadRatherThanReadStaleBytes() async throws {
        try await withDatabase { database, _ in
            let original = String(repeating: "first ", count: 20)
            try await database.write(Record(id: "a", data: CbKeepsDecoders(name: original)))
            let read = try #require(try await database.read(id: "a") as CbKeepsDecoders?)
            #expect(read.name == original)
            for version in 0..<6 {
                try await database.write(Record(id: "a", data: CbKeepsDecoders(name: String(repeating: "v\(version) ", count: 40))))
            }
            for outcome in [
                Result { try read.nameDecoder?.singleValueContainer().decode(String.self) },
                Result { try read.decoder?.container(keyedBy: CbKeepsDecoders.CodingKeys.self).decode(String.self, forKey: .name) },
            ] {
                guard case let .failure(error) = outcome, case DecodingError.dataCorrupted = error else {
                    Issue.record("expected a DecodingError, got \(outcome)")
                    continue
                }
            }
        }
    }

    /// A thread reuses the top decoder of its last decode when nothing else holds it: a
    /// decoder or container a model kept is never reused, and stays ended through the decodes
    /// that follow on the thread (which reuse theirs, and decode what they read).
    @Test func aKeptDecoderOrContainerIsNotReusedByTheThreadsNextDecodes() throws {
        func fields(_ json: String) -> DataObject { DataObject(rawString: json) }
        let keptContainer = try CbKeepsContainer._restore(from: fields(#"{"object":"CbKeepsContainer","name":"first"}"#))
        let keptDecoders = try CbKeepsDecoders._restore(from: fields(#"{"object":"CbKeepsDecoders","name":"second"}"#))
        #expect(keptContainer.name == "first" && keptDecoders.name == "second")
        for index in 0..<4 {
            let person = CbPerson(id: "\(index)", name: "n\(index)", age: index, address: CbAddress(street: "s\(index)", zip: "z"), tags: ["t\(index)"], object: "o")
            #expect(try CbPerson._restore(from: fields(try #require(try person._storedFields().toRawString()))) == person)
            let again = try CbKeepsDecoders._restore(from: fields(#"{"object":"CbKeepsDecoders","name":"again \#(index)"}"#))
            #expect(again.name == "again \(index)")
            // Kept, so never another decode's decoder (which would make it live again meanwhile).
            #expect(try #require(again.decoder) as AnyObject !== (try #require(keptDecoders.decoder) as AnyObject))
        }
        for outcome in [
            Result { try keptContainer.container?.decode(String.self, forKey: .name) },
            Result { try keptDecoders.decoder?.container(keyedBy: CbKeepsDecoders.CodingKeys.self).decode(String.self, forKey: .name) },
            Result { try keptDecoders.nameDecoder?.singleValueContainer().decode(String.self) },
        ] {
            guard case let .failure(error) = outcome, case DecodingError.dataCorrupted = error else {
                Issue.record("expected a DecodingError, got \(outcome)")
                continue
            }
        }
    }

    @Test func anEmptyIDIsRefusedOnBothFaces() async throws {
        try await withBothFaces { (database, sync) async throws in
            let nameless = CbPerson(id: "", name: "n", age: 0, address: nil, tags: [], object: "")
            await expectError({ $0 == .emptyID }) { try await database.write(nameless) }
            await expectError({ $0 == .emptyID }) { try await database.write(contentsOf: [Self.ada, nameless]) }
            await expectError({ $0 == .emptyID }) { _ = try await database.read(CbPerson.self, id: "") }
            await expectError({ $0 == .emptyID }) { try await database.delete(nameless) }
            #expect(!sync.write(nameless))
            #expect(sync.lastError == .emptyID)
            #expect(sync.write(contentsOf: [Self.ada, nameless]) == 0)
            #expect(sync.read(CbPerson.self, id: "") == nil)
            #expect(!sync.delete(nameless))
            #expect(try await database.count() == 0)
        }
    }
}

extension CodableModelTests {
    @Test func aStorableAndCodableTypeIsStoredByItsStorableMethods() async throws {
        let text = try #require(try CbDualModel(value: 5)._storedFields().toRawString())
        #expect(text == #"{"object":"CbDualModel","storable_value":5}"#)
        let holder = CbHoldsDual(dual: CbDualModel(value: 1), duals: [CbDualModel(value: 2)])
        let holderTree = try #require(jsonTree(try holder._storedFields().toRawString()))
        #expect(holderTree["dual"] as? NSDictionary == ["object": "CbDualModel", "storable_value": 1])
        try await withBothFaces { database, sync in
            try await database.write(Record(id: "m", data: CbDualModel(value: 5)))
            let read = try #require(try await database.read(id: "m") as CbDualModel?)
            #expect(read.value == 5 && read.madeBy == "dataObject")
            #expect(sync.write(Record(id: "h", data: holder)))
            let readHolder = try #require(try await database.read(id: "h") as CbHoldsDual?)
            #expect(readHolder.dual.value == 1 && readHolder.dual.madeBy == "dataObject")
            #expect(readHolder.duals.map(\.value) == [2] && readHolder.duals.map(\.madeBy) == ["dataObject"])
        }
    }
}

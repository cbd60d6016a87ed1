import Foundation
import LocalLMDB
import LocalLMDBTestSupport
import Testing

/// A model whose decoding calls the public API, which throws the public error: stored with a
/// `payload` that is not JSON, it fails to decode with `invalidJSON`.
struct PeErrorFromModelCode: Codable, Persistable {
    let payload: String

    init(payload: String) { self.payload = payload }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        payload = try container.decode(String.self, forKey: .payload)
        _ = try DataObject(validating: payload)
    }
}

final class PeOther: Storable {
    init() {}
    required init(dataObject: DataObject) {}
    func toDataObject() -> DataObject { DataObject(self) }
}

/// The layers below `LocalLMDB` throw their own error type; every public call must turn it into
/// `LocalDatabaseError`, case for case. `expectError` fails on any other error type, so each
/// check here fails if one layer's error escapes unconverted.
@Suite("Public errors from every layer")
struct PublicErrorTests {
    @Test func everyLayersErrorReachesTheCallerAsLocalDatabaseError() async throws {
        try await withDatabase { database, directory in
            // The record layout (models): an empty id, a record of another class.
            await expectError({ $0 == .emptyID }) { try await database.write(Record(id: "", data: Note(text: "x"))) }
            try await database.write(Record(id: "note", data: Note(text: "x")))
            await expectError({ if case .typeMismatch = $0 { true } else { false } }) {
                let _: PeOther? = try await database.read(id: "note")
            }
            // The engine: transaction rules.
            await expectError({ $0 == .noActiveTransaction }) { try await database.commitTransaction() }
            try await database.startTransaction()
            await expectError({ $0 == .transactionAlreadyActive }) { try await database.startTransaction(override: false) }
            try await database.rollbackTransaction()
            // The store: a change token of another database.
            let other = try LocalDatabase(directory: directory.appendingPathComponent("other"))
            let foreign = try other.changeToken()
            await expectError({ if case .changesUnavailable = $0 { true } else { false } }) { _ = try database.changes(since: foreign) }
            // The LMDB wrapper: a directory that is a file; a closed environment.
            let file = directory.appendingPathComponent("a-file")
            try Data("x".utf8).write(to: file)
            await expectError({ if case .invalidDirectory = $0 { true } else { false } }) { _ = try LocalDatabase(directory: file) }
            await other.close()
            await expectError({ $0 == .closed }) { try await other.write(Record(id: "late", data: Note(text: "x"))) }
            await expectError({ $0 == .closed }) { _ = try await other.count() }
            var changes = other.changes().makeAsyncIterator()
            await expectError({ $0 == .closed }) { _ = try await changes.next() }
            // The codec, through the public entry points that parse.
            await expectError({ if case .invalidJSON = $0 { true } else { false } }) { _ = try DataObject(validating: "{not json") }
            await expectError({ if case .invalidJSON = $0 { true } else { false } }) {
                let _: CbPerson = try ModelFactory.model(fromJSON: Data("[1,".utf8))
            }
            // Class registration.
            await expectError({ if case .classRegistration = $0 { true } else { false } }) { try StoredClasses.register(PeOther.self, as: "") }
        }
    }

    /// The synchronous face reports through `lastError`, in the public type.
    @Test func theSynchronousFaceReportsThePublicError() async throws {
        try await withTemporaryDirectory { directory in
            let database = try SerializationDatabase(directory: directory)
            #expect(!database.write(Record(id: "", data: Note(text: "x"))))
            #expect(database.lastError == .emptyID)
            #expect(!database.commitTransaction())
            #expect(database.lastError == .noActiveTransaction)
        }
    }

    /// A model's own code that calls the public API and throws its error: the read throws that
    /// error as it is, not as a decoding failure of the model.
    @Test func aPublicErrorThrownByModelCodeComesBackAsItIs() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "bad", data: PeErrorFromModelCode(payload: "{not json")))
            await expectError({ if case .invalidJSON = $0 { true } else { false } }) {
                let _: PeErrorFromModelCode? = try await database.read(id: "bad")
            }
        }
    }
}

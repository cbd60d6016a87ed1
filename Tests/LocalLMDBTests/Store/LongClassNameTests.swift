import Foundation
import LocalLMDB
import Testing

/// A class whose name (617 bytes) is longer than LMDB's 511-byte key limit.
final class VeryLongClassNameXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX: Storable {
    let value: Int
    init(value: Int) { self.value = value }
    required init(dataObject: DataObject) { value = dataObject.get("value") }
    func toDataObject() -> DataObject { DataObject(self).add(key: "value", value: value) }
}

typealias LongNamed = VeryLongClassNameXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX

@Suite("Class names over the key limit")
struct LongClassNameTests {
    @Test func everyOperationWorksWithALongClassName() async throws {
        #expect(String(describing: LongNamed.self).utf8.count > 511)
        try await withDatabase { database, _ in
            for index in 0..<20 { try await database.write(Record(id: "l\(index)", data: LongNamed(value: index))) }
            let one: LongNamed? = try await database.read(id: "l7")
            #expect(one?.value == 7)
            let all: [LongNamed] = try await database.read()
            #expect(all.map(\.value).sorted() == Array(0..<20))
            #expect(try await database.count(LongNamed.self) == 20)
            #expect(Set(try await database.readIDs(LongNamed.self)).count == 20)
            #expect(try await database.delete(LongNamed.self) == 20)
            #expect(try await database.count() == 0)
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }
}

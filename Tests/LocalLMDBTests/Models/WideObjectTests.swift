import Foundation
import LocalLMDB
import LocalLMDBTestSupport
import Testing

/// A model with as many fields as `WideModel.width` says.
final class WideModel: Storable {
    nonisolated(unsafe) static var width = 0
    let values: [Int]
    init(values: [Int]) { self.values = values }
    required init(dataObject: DataObject) {
        values = (0..<WideModel.width).map { dataObject.get("field\($0)", onFail: -1) }
    }
    func toDataObject() -> DataObject {
        let object = DataObject(self)
        for (index, value) in values.enumerated() { object.add(key: "field\(index)", value: value) }
        return object
    }
}

/// A complexity guard, not a speed target (speed is measured by the tracked benchmarks
/// `WideObject.*`): building, storing, parsing and reading an object of 200,000 fields must be
/// linear. Quadratic code (a linear search per `add`, a rescan of earlier keys per key while
/// validating) took about 12 s for 20,000 fields, so hours for 200,000; linear code takes about
/// a second here, far inside the limit.
@Suite("Wide objects", .serialized)
struct WideObjectTests {
    // The limit catches quadratic work; a ThreadSanitizer run on two busy cores has taken over a minute.
    @Test(.timeLimit(.minutes(3))) func aWideObjectIsBuiltParsedAndReadInLinearTime() async throws {
        let width = 200_000
        WideModel.width = width
        try await withDatabase { database, _ in
            let model = WideModel(values: Array(0..<width))
            try await database.write(Record(id: "wide", data: model))
            let read = try #require(try await database.read(id: "wide") as WideModel?)
            #expect(read.values == model.values)
            let text = try #require(model.toDataObject().toRawString())
            let parsed = try DataObject(validating: text)
            #expect(parsed.get("field\(width - 1)", onFail: -1) == width - 1)
            // Keys that repeat in a wide document from outside: the last value wins.
            let repeated = String(text.dropLast()) + ",\"field7\":-7}"
            #expect(DataObject(rawString: repeated).get("field7", onFail: 0) == -7)
        }
    }
}

import Foundation

/// The JSON of objects `0..<count` of a model, as LocalLMDB stores the hand-written objects,
/// encoded once before timing and kept contiguously (one buffer and the offsets into it): a
/// million wide objects take about 800 MB, once, however many raw LMDB stores a run opens.
public final class EncodedObjects: Sendable {
    public let model: BenchModel
    public let count: Int
    private let bytes: [UInt8]
    /// Object `i`'s bytes are `bytes[offsets[i]..<offsets[i + 1]]`.
    private let offsets: [Int]

    public init(model: BenchModel, count: Int) {
        self.model = model
        self.count = count
        var bytes: [UInt8] = []
        var offsets = [0]
        offsets.reserveCapacity(count + 1)
        for index in 0..<count {
            let json = model.json(index: index)
            if index == 0 { bytes.reserveCapacity(json.count * count + json.count * count / 8) }
            bytes += json
            offsets.append(bytes.count)
        }
        self.bytes = bytes
        self.offsets = offsets
    }

    func withBytes<R>(of index: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes { all in try body(UnsafeRawBufferPointer(rebasing: all[offsets[index]..<offsets[index + 1]])) }
    }
}

@testable import LocalLMDB
import Testing

@Suite("Reader pool")
struct ReaderPoolTests {
    /// Stand-ins for transaction handles: the pool stores them and never dereferences them.
    static func handles(_ range: Range<Int>) -> [OpaquePointer] {
        range.compactMap { OpaquePointer(bitPattern: 0x1000 + $0 * 16) }
    }

    @Test func aThreadGetsBackWhatItPutAndAFullStripeRefuses() {
        let pool = ReaderPool()
        var accepted: [OpaquePointer] = []
        var refused = 0
        for handle in Self.handles(0..<20) {
            if pool.put(handle) { accepted.append(handle) } else { refused += 1 }
        }
        // One thread uses one stripe, which holds a bounded number of handles.
        #expect(accepted.count == 8)
        #expect(refused == 12)
        var taken: [OpaquePointer] = []
        while let handle = pool.take() { taken.append(handle) }
        #expect(Set(taken.map(UInt.init(bitPattern:))) == Set(accepted.map(UInt.init(bitPattern:))))
    }

    @Test func drainReturnsEveryPooledHandleFromEveryThread() async {
        let pool = ReaderPool()
        let total = await withTaskGroup(of: Int.self) { group in
            for task in 0..<16 {
                group.addTask {
                    Self.handles((task * 4)..<(task * 4 + 4)).filter { pool.put($0) }.count
                }
            }
            return await group.reduce(0, +)
        }
        var drained: [OpaquePointer] = []
        pool.drain { drained.append($0) }
        #expect(drained.count == total)
        #expect(Set(drained.map(UInt.init(bitPattern:))).count == total)
        #expect(pool.take() == nil)
    }
}

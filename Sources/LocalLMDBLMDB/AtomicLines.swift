import CLMDB

/// Machine words read and written atomically (sequentially consistent), in groups that each
/// have a cache line to themselves.
///
/// A word that several threads only read costs them nothing shared; a word that one thread
/// writes often must not sit on a line that other threads write too, or each write would take
/// the line from them ("false sharing"). Each line here is 128 bytes: two 64-byte lines, as
/// some CPUs fetch lines in pairs.
///
/// Ownership: the words are one allocation, made in `init` and freed in `deinit`; nothing else
/// keeps pointers into it.
@usableFromInline package final class AtomicLines: @unchecked Sendable {
    /// Bytes per line.
    @usableFromInline static let lineSize = 128
    /// Words per line.
    @usableFromInline static let wordsPerLine = lineSize / MemoryLayout<Int>.stride

    @usableFromInline let words: UnsafeMutablePointer<Int>
    /// The number of lines.
    @usableFromInline let count: Int

    /// `count` lines of zeros.
    @inlinable package init(lines count: Int) {
        self.count = count
        let raw = UnsafeMutableRawPointer.allocate(byteCount: count * Self.lineSize, alignment: Self.lineSize)
        words = raw.initializeMemory(as: Int.self, repeating: 0, count: count * Self.wordsPerLine)
    }

    deinit {
        words.deinitialize(count: count * Self.wordsPerLine)
        words.deallocate()
    }

    @inline(__always)
    @inlinable func word(_ line: Int, _ index: Int) -> UnsafeMutablePointer<Int> {
        words + (line * Self.wordsPerLine + index)
    }

    @inline(__always)
    @inlinable package func load(line: Int, word index: Int = 0) -> Int {
        clmdb_atomic_load(word(line, index))
    }

    @inline(__always)
    @inlinable package func store(_ value: Int, line: Int, word index: Int = 0) {
        clmdb_atomic_store(word(line, index), value)
    }

    /// Adds `delta`; returns the new value.
    @inline(__always)
    @discardableResult
    @inlinable package func add(_ delta: Int, line: Int, word index: Int = 0) -> Int {
        clmdb_atomic_add(word(line, index), delta)
    }

    /// Stores `value`; returns the value before.
    @inline(__always)
    @inlinable func exchange(_ value: Int, line: Int, word index: Int = 0) -> Int {
        clmdb_atomic_exchange(word(line, index), value)
    }

    /// Stores `desired` if the word holds `expected`; returns whether it did.
    @inline(__always)
    @inlinable func compareExchange(expected: Int, desired: Int, line: Int, word index: Int = 0) -> Bool {
        clmdb_atomic_compare_exchange(word(line, index), expected, desired)
    }
}

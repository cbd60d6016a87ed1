import CLocalLMDBBase

/// How far down a thread's stack the codec may recurse.
///
/// Nesting is limited to `JSONValidator.maxDepth` levels everywhere, but the stack a level takes
/// depends on the build (an unoptimized build's frames are several times larger), on the model's
/// own `encode(to:)` and `init(from:)`, and the thread's stack may be small (512 KiB for Apple's
/// secondary threads). So every recursive step of the codec (the validator, the writer, trees,
/// the `Codable` coders, nested data objects) also checks that the stack has not grown past the
/// thread's limit, and stops with a typed error there rather than overflow it. The limit keeps
/// `reserve` below it: room for the step under way, for whatever it calls that does not
/// recurse, and for reporting the error.
@usableFromInline package enum StackGuard {
    /// Why a value was refused when the stack ran low.
    @usableFromInline package static let refusal = "nested too deeply for this thread's stack"

    /// The room kept below the limit of a stack of `size` bytes.
    @inlinable static func reserve(forStackOf size: UInt) -> UInt {
        min(size / 4, 128 << 10)
    }

    /// The address below which the calling thread's stack is too low to recurse further; 0
    /// when its bounds cannot be found (then only the nesting limits hold).
    @inlinable package static func limitOfCurrentThread() -> UInt {
        guard let (lowest, size) = ThreadStack.bounds else { return 0 }
        return lowest + reserve(forStackOf: size)
    }

    /// Whether the calling thread's stack has grown past `limit` (`ReadScratch.stackLimit`).
    ///
    /// The position is the frame's address, not a local's: under AddressSanitizer a local whose
    /// address is taken lives on a heap "fake stack", below any thread's stack, and every document
    /// was refused as too deep.
    @inline(__always)
    @inlinable package static func isLow(_ limit: UInt) -> Bool {
        UInt(locallmdb_stack_position()) < limit
    }
}

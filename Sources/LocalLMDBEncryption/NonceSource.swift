import Crypto
import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Fresh random 96-bit nonces for AES-GCM, drawn from the system's secure random generator a
/// block at a time: one system call gives 21 nonces, where swift-crypto's `AES.GCM.Nonce()`
/// makes two calls for each (about 0.6 µs a nonce on Linux, a quarter of a seal).
///
/// A nonce is still random and used once: each one is a distinct slice of the generator's
/// output, handed out under a lock. A child process made by `fork` (without `exec`) would
/// inherit the block and hand out the parent's next nonces again, so handlers registered with
/// `pthread_atfork` discard the child's block first, and hold the lock across the `fork` so
/// that the child never inherits it held by a thread it does not have.
///
/// Invariant: `offset` is a multiple of `Self.nonceSize`, at most `block.count`; the bytes from
/// `offset` on have never been handed out, by this process or by a parent.
final class NonceSource: @unchecked Sendable {
    /// The source every `AESGCMCipher` draws from.
    static let shared = NonceSource()

    static let nonceSize = 12
    static let blockSize = 340 * nonceSize

    fileprivate let lock = NSLock()
    private var block: [UInt8]
    /// The next unused nonce of `block`.
    private var offset: Int
    /// `forkCount` when `block` was drawn: a block drawn before a `fork` is discarded.
    private var drawnAfterForks: Int

    private init() {
        block = [UInt8](repeating: 0, count: Self.blockSize)
        offset = Self.blockSize
        drawnAfterForks = 0
        Self.registerForkHandler
    }

    /// A new random nonce.
    func next() -> AES.GCM.Nonce {
        lock.lock()
        defer { lock.unlock() }
        if offset == block.count || drawnAfterForks != forkCount {
            Self.fillRandom(&block)
            offset = 0
            drawnAfterForks = forkCount
        }
        assert(offset % Self.nonceSize == 0 && offset + Self.nonceSize <= block.count, "a whole nonce is left in the block")
        let start = offset
        offset += Self.nonceSize
        // Never fails: the slice is exactly 12 bytes, the size AES-GCM nonces have.
        return block.withUnsafeBytes { bytes in
            (try? AES.GCM.Nonce(data: UnsafeRawBufferPointer(rebasing: bytes[start..<(start + Self.nonceSize)]))) ?? AES.GCM.Nonce()
        }
    }

    /// Fills `buffer` from the system's secure random generator.
    private static func fillRandom(_ buffer: inout [UInt8]) {
        #if canImport(Darwin)
        buffer.withUnsafeMutableBytes { bytes in
            if let base = bytes.baseAddress { arc4random_buf(base, bytes.count) }
        }
        return
        #else
        // `getentropy` gives at most 256 bytes a call.
        let filled = buffer.withUnsafeMutableBytes { bytes -> Bool in
            guard let base = bytes.baseAddress else { return true }
            var done = 0
            while done < bytes.count {
                let count = min(256, bytes.count - done)
                guard getentropy(base + done, count) == 0 else { return false }
                done += count
            }
            return true
        }
        if filled { return }
        #endif
        // `getentropy` failed (a kernel without `getrandom`): the standard library's generator,
        // 8 bytes at a time.
        var generator = SystemRandomNumberGenerator()
        for index in buffer.indices where index % 8 == 0 {
            let word = generator.next()
            for byte in 0..<min(8, buffer.count - index) {
                buffer[index + byte] = UInt8(truncatingIfNeeded: word >> (8 * byte))
            }
        }
    }

    /// Registers, once, the handlers that hold the lock across a `fork` and count forks in the
    /// child.
    private static let registerForkHandler: Void = {
        _ = pthread_atfork(
            { NonceSource.shared.lock.lock() },
            { NonceSource.shared.lock.unlock() },
            {
                forkCount &+= 1
                NonceSource.shared.lock.unlock()
            })
    }()
}

/// How many times this process is a child made by `fork` (counted in the child, where a single
/// thread runs when it changes). Read under `NonceSource`'s lock.
nonisolated(unsafe) private var forkCount = 0

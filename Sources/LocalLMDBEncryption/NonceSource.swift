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
/// block of 21 at a time: one `getentropy` call on Linux (one `arc4random_buf` on Apple
/// platforms), where swift-crypto's `AES.GCM.Nonce()` makes two calls for each nonce (about
/// 0.6 µs a nonce on Linux, a quarter of a seal).
///
/// A nonce is still random and used once: each one is a distinct slice of the generator's
/// output, handed out under a lock. A child process made by `fork` (without `exec`) would
/// inherit the block and hand out its parent's next nonces again, so `pthread_atfork` handlers
/// hold the lock across the `fork`, and in the child discard the block and make the lock anew
/// (the child has only the thread that forked). When the handlers cannot be registered, every
/// nonce is drawn by itself. A process copied without `fork` (a virtual machine's snapshot
/// restored twice) may repeat the rest of its block: at most 20 nonces (see the DocC article
/// *Encryption*).
///
/// Invariant: `offset` is a multiple of `Self.nonceSize`, at most `Self.blockSize`; the bytes
/// of `block` from `offset` on have never been handed out, by this process or by a parent.
final class NonceSource: @unchecked Sendable {
    /// The source every `AESGCMCipher` draws from.
    static let shared = NonceSource()

    static let nonceSize = 12
    static let blockSize = 21 * nonceSize

    /// Guards `block` and `offset`; at a fixed address, so that the child of a `fork` can make
    /// it anew.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var block: [UInt8]
    /// The next unused nonce of `block`.
    private var offset: Int
    /// Whether the `fork` handlers are registered: without them, nothing is kept.
    private let buffers: Bool

    private init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        block = [UInt8](repeating: 0, count: Self.blockSize)
        offset = Self.blockSize
        buffers = Self.registerForkHandlers()
    }

    /// A new random nonce.
    func next() -> AES.GCM.Nonce {
        guard buffers else { return AES.GCM.Nonce() }
        var nonce = (UInt64(0), UInt32(0))
        pthread_mutex_lock(mutex)
        if offset == Self.blockSize {
            Self.fillRandom(&block)
            offset = 0
        }
        assert(offset % Self.nonceSize == 0 && offset + Self.nonceSize <= block.count, "a whole nonce is left in the block")
        block.withUnsafeBytes { bytes in
            withUnsafeMutableBytes(of: &nonce) { target in
                target.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + Self.nonceSize)]))
            }
        }
        offset += Self.nonceSize
        pthread_mutex_unlock(mutex)
        // Never fails: the bytes are exactly 12, the size of AES-GCM's nonces.
        return withUnsafeBytes(of: nonce) { bytes in
            (try? AES.GCM.Nonce(data: UnsafeRawBufferPointer(rebasing: bytes[..<Self.nonceSize]))) ?? AES.GCM.Nonce()
        }
    }

    /// Fills `buffer` (at most 256 bytes) from the system's secure random generator.
    private static func fillRandom(_ buffer: inout [UInt8]) {
        assert(buffer.count <= 256, "getentropy gives at most 256 bytes a call")
        #if canImport(Darwin)
        buffer.withUnsafeMutableBytes { bytes in
            if let base = bytes.baseAddress { arc4random_buf(base, bytes.count) }
        }
        #else
        #if os(Linux) || os(Android)
        let filled = buffer.withUnsafeMutableBytes { bytes in
            bytes.baseAddress.map { getentropy($0, bytes.count) == 0 } ?? true
        }
        #else
        let filled = false
        #endif
        if !filled {
            // No `getentropy` (or a kernel without `getrandom`): the standard library's
            // generator, 8 bytes at a time.
            var generator = SystemRandomNumberGenerator()
            for index in stride(from: 0, to: buffer.count, by: 8) {
                let word = generator.next()
                for byte in 0..<min(8, buffer.count - index) {
                    buffer[index + byte] = UInt8(truncatingIfNeeded: word >> (8 * byte))
                }
            }
        }
        #endif
    }

    /// Registers the handlers that hold the lock across a `fork`, and in the child discard the
    /// block and make the lock anew. False when they cannot be registered.
    private static func registerForkHandlers() -> Bool {
        pthread_atfork(
            { pthread_mutex_lock(NonceSource.shared.mutex) },
            { pthread_mutex_unlock(NonceSource.shared.mutex) },
            {
                // The child's only thread: the lock, held across the fork, is made anew.
                let source = NonceSource.shared
                source.offset = NonceSource.blockSize
                pthread_mutex_init(source.mutex, nil)
            }) == 0
    }
}

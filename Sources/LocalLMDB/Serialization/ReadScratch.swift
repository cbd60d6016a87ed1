#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What reads keep per thread between calls: a spare data object and the names of the types
/// they restored. With them, reads on a thread that has read before allocate no data object
/// for the records they restore and take no lock for type names.
///
/// Confinement: each thread has its own instance (thread-local storage), used only by
/// synchronous code on that thread, and released when the thread exits. Users take the spare
/// out while they use it, so a nested use on the same thread finds none rather than the same.
final class ReadScratch {
    /// A data object that the last model restored on this thread did not keep.
    var spare: DataObject?
    /// Type names by type, most recent last; a few entries, searched linearly.
    private var names: [(type: ObjectIdentifier, name: String)] = []
    private static let nameCapacity = 8

    /// The calling thread's scratch.
    static var current: ReadScratch {
        if let stored = pthread_getspecific(key) {
            return Unmanaged<ReadScratch>.fromOpaque(stored).takeUnretainedValue()
        }
        let scratch = ReadScratch()
        pthread_setspecific(key, Unmanaged.passRetained(scratch).toOpaque())
        return scratch
    }

    /// `type.init(dataObject:)` reading `object` in place, with this thread's spare data object
    /// (see `DataObject.restore(_:from:spare:)`). The spare is out of the scratch meanwhile.
    func restore<T: Storable>(_ type: T.Type, from object: EncodedObject) -> T {
        var spare = self.spare
        self.spare = nil
        defer { self.spare = spare }
        return DataObject.restore(type, from: object, spare: &spare)
    }

    /// The name remembered for `type`, if any.
    func name(of type: ObjectIdentifier) -> String? {
        for entry in names.reversed() where entry.type == type { return entry.name }
        return nil
    }

    /// Remembers `name` for `type`, forgetting the oldest name when full.
    func remember(_ name: String, for type: ObjectIdentifier) {
        if names.count == Self.nameCapacity { names.removeFirst() }
        names.append((type, name))
    }

    /// The thread-local slot; its destructor releases a thread's scratch when the thread exits.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, releaseScratch)
        return key
    }()
}

#if canImport(Darwin)
private func releaseScratch(_ stored: UnsafeMutableRawPointer) {
    Unmanaged<ReadScratch>.fromOpaque(stored).release()
}
#else
private func releaseScratch(_ stored: UnsafeMutableRawPointer?) {
    if let stored { Unmanaged<ReadScratch>.fromOpaque(stored).release() }
}
#endif

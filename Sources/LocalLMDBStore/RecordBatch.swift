import LocalLMDBLMDB
import LocalLMDBJSON

/// Records encoded for one put, in the order given, with their bytes kept together.
///
/// A record's key, its full id (when the key is a digest of it) and its value lie one after
/// another in a chunk of memory shared with the records around it. Building a batch of a
/// million records therefore allocates a few hundred chunks, not three objects per record, and
/// applying it reaches each record through its entry and its chunk, not through objects of its
/// own: a batch is applied in key order, which is random in memory, so every object per record
/// (and retaining it) was a cache miss on the writer thread.
///
/// Invariants (kept here):
/// - an entry's bytes lie in `chunks[entry.chunk]` from `entry.start`: the key, then the full
///   id (`idCount` bytes, 0 when the key is the id itself), then the value;
/// - bytes of a chunk below its `used` count never change; only a batch holding the only
///   reference to its last chunk appends to it, so copies of a batch share chunks safely;
/// - `types[entry.type]` is the record's class, each pair of a name and its writer's
///   `KnownMembers` once.
@usableFromInline package struct RecordBatch: Sendable {
    /// A stored class name used in the batch, with its key in the type index, and the members
    /// the model writing its records reads (nil: the records are whole documents).
    @usableFromInline struct RecordClass: Sendable {
        @usableFromInline let name: String
        @usableFromInline let key: StorageKey
        @usableFromInline let known: KnownMembers?

        @inlinable init(name: String, key: StorageKey, known: KnownMembers? = nil) {
            self.name = name
            self.key = key
            self.known = known
        }
    }

    /// One record's bytes, lent for the duration of a call.
    @usableFromInline struct Record {
        /// The key in `records`.
        @usableFromInline let key: UnsafeRawBufferPointer
        /// The full id when the key is a digest of it; empty when the key is the id itself.
        @usableFromInline let fullID: UnsafeRawBufferPointer
        /// The complete `RecordValue` bytes.
        @usableFromInline let value: UnsafeRawBufferPointer
        /// The record's class: an index into `types`.
        @usableFromInline let type: Int

        /// The record id's UTF-8.
        @inlinable var id: UnsafeRawBufferPointer { fullID.isEmpty ? key : fullID }

        @inlinable init(key: UnsafeRawBufferPointer, fullID: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, type: Int) {
            self.key = key
            self.fullID = fullID
            self.value = value
            self.type = type
        }
    }

    @usableFromInline struct Entry: Sendable {
        @usableFromInline var chunk: Int32
        @usableFromInline var type: Int32
        @usableFromInline var start: Int
        @usableFromInline var keyCount: Int
        @usableFromInline var idCount: Int
        @usableFromInline var valueCount: Int

        @inlinable init(chunk: Int32, type: Int32, start: Int, keyCount: Int, idCount: Int, valueCount: Int) {
            self.chunk = chunk
            self.type = type
            self.start = start
            self.keyCount = keyCount
            self.idCount = idCount
            self.valueCount = valueCount
        }
    }

    @usableFromInline var chunks: [RecordChunk] = []
    @usableFromInline var entries: [Entry] = []
    /// The classes of the records, each once, in the order first used.
    @usableFromInline var types: [RecordClass] = []
    /// The size of every value together.
    @usableFromInline package var valueBytes = 0
    /// The size of every key together.
    @usableFromInline var keyBytes = 0
    /// The size of every record's class name together.
    @usableFromInline var classNameBytes = 0

    /// Chunks grow to this size (a record larger than it gets a chunk of its own size).
    @usableFromInline static let chunkSize = 1 << 20

    @inlinable package init() {}

    /// The number of records.
    @inlinable package var count: Int { entries.count }
    /// Whether the batch has no records.
    @inlinable package var isEmpty: Bool { entries.isEmpty }

    /// Calls `body` with each record's key, id (UTF-8), complete value, class name and the class
    /// name's key, in the order given: for engines that store records elsewhere than in LMDB.
    package func forEachRecord<E: Error>(
        _ body: (_ key: UnsafeRawBufferPointer, _ id: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, _ className: String, _ classKey: StorageKey) throws(E) -> Void
    ) throws(E) {
        for index in indices {
            try withRecord(at: index) { record throws(E) in
                let type = types[record.type]
                try body(record.key, record.id, record.value, type.name, type.key)
            }
        }
    }

    /// The id of the batch's first record, in the order given; nil for an empty batch.
    package var firstID: String? {
        guard !entries.isEmpty else { return nil }
        return withRecord(at: 0) { String(decoding: $0.id, as: UTF8.self) }
    }

    /// Whether any class name the records are stored under satisfies `predicate`.
    package func containsClassName(where predicate: (String) -> Bool) -> Bool {
        types.contains { predicate($0.name) }
    }
    /// The records' positions, in the order given.
    @inlinable var indices: Range<Int> { entries.indices }

    /// Appends a record of the class `className` under `key`, with `value` (the complete
    /// `RecordValue` bytes) and `fullID` when `key` is a digest of the id. `known`: the members
    /// the model that wrote the record reads, when a model did (see `KnownMembers`).
    @inlinable package mutating func append(
        key: StorageKey, fullID: String?, className: String, maxKeySize: Int, value: UnsafeRawBufferPointer, known: KnownMembers? = nil
    ) {
        let type = typeIndex(of: className, known: known)
            ?? addType(RecordClass(name: className, key: StorageKey(className, maxKeySize: maxKeySize), known: known))
        var fullID = fullID ?? ""
        key.withBytes { key in
            fullID.withUTF8 { id in append(key: key, fullID: UnsafeRawBufferPointer(id), value: value, type: type) }
        }
    }

    /// Appends `other`'s records, after this batch's. Their bytes are shared, not copied.
    @inlinable package mutating func append(contentsOf other: RecordBatch) {
        var mapped: [Int32] = []
        mapped.reserveCapacity(other.types.count)
        for type in other.types { mapped.append(Int32(typeIndex(of: type.name, known: type.known) ?? addType(type))) }
        let firstChunk = Int32(chunks.count)
        chunks.append(contentsOf: other.chunks)
        entries.reserveCapacity(entries.count + other.entries.count)
        for var entry in other.entries {
            entry.chunk += firstChunk
            entry.type = mapped[Int(entry.type)]
            entries.append(entry)
        }
        valueBytes += other.valueBytes
        keyBytes += other.keyBytes
        classNameBytes += other.classNameBytes
    }

    /// The records at `indices`, in that order, sharing this batch's bytes.
    package func selecting(_ indices: [Int]) -> RecordBatch {
        var selected = RecordBatch()
        selected.chunks = chunks
        selected.types = types
        selected.entries.reserveCapacity(indices.count)
        for index in indices {
            let entry = entries[index]
            selected.entries.append(entry)
            selected.valueBytes += entry.valueCount
            selected.keyBytes += entry.keyCount
            selected.classNameBytes += types[Int(entry.type)].name.utf8.count
        }
        return selected
    }

    /// Calls `body` with the record at `index`.
    @inline(__always)
    @inlinable func withRecord<R, E: Error>(at index: Int, _ body: (Record) throws(E) -> R) throws(E) -> R {
        let entry = entries[index]
        let start = UnsafeRawPointer(chunks[Int(entry.chunk)].base + entry.start)
        let idStart = start + entry.keyCount
        let valueStart = idStart + entry.idCount
        return try body(Record(
            key: UnsafeRawBufferPointer(start: start, count: entry.keyCount),
            fullID: UnsafeRawBufferPointer(start: idStart, count: entry.idCount),
            value: UnsafeRawBufferPointer(start: valueStart, count: entry.valueCount),
            type: Int(entry.type)))
    }

    /// The class of the record at `index` (an index into `types`).
    @inlinable func type(at index: Int) -> Int {
        Int(entries[index].type)
    }

    /// The index in `types` of the class `name` written with `known`, the name compared by its
    /// bytes: class names that are equal as Swift strings but spelt differently (canonically
    /// equivalent) are different classes, stored under different keys.
    @inlinable func typeIndex(of name: String, known: KnownMembers?) -> Int? {
        @inline(__always) func same(_ type: RecordClass) -> Bool {
            type.known === known && type.name.hasSameUTF8(as: name)
        }
        // A batch is usually of one class: the last one added is checked first.
        if let last = types.last, same(last) { return types.count - 1 }
        return types.firstIndex(where: same)
    }

    @inlinable mutating func addType(_ type: RecordClass) -> Int {
        types.append(type)
        return types.count - 1
    }

    @inlinable mutating func append(key: UnsafeRawBufferPointer, fullID: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, type: Int) {
        let size = key.count + fullID.count + value.count
        let (chunk, start) = reserve(size)
        var target = chunks[chunk].base + start
        @inline(__always) func copy(_ part: UnsafeRawBufferPointer) {
            if let source = part.baseAddress, !part.isEmpty { target.copyMemory(from: source, byteCount: part.count) }
            target += part.count
        }
        copy(key)
        copy(fullID)
        copy(value)
        entries.append(Entry(
            chunk: Int32(chunk), type: Int32(type), start: start,
            keyCount: key.count, idCount: fullID.count, valueCount: value.count))
        valueBytes += value.count
        keyBytes += key.count
        classNameBytes += types[type].name.utf8.count
    }

    /// Room for `size` bytes: in the last chunk when this batch alone holds it and it has room,
    /// else in a new chunk, twice the last one's size up to `chunkSize` (so a batch of one
    /// record takes just its size) and never smaller than `size`.
    @inlinable mutating func reserve(_ size: Int) -> (chunk: Int, start: Int) {
        if let last = chunks.indices.last, isKnownUniquelyReferenced(&chunks[last]), chunks[last].capacity - chunks[last].used >= size {
            let start = chunks[last].used
            chunks[last].used += size
            return (last, start)
        }
        let capacity = max(size, min(Self.chunkSize, 2 * (chunks.last?.capacity ?? 0)))
        let chunk = RecordChunk(capacity: capacity)
        chunk.used = size
        chunks.append(chunk)
        return (chunks.count - 1, 0)
    }
}

/// Memory holding records' bytes (see `RecordBatch`'s invariants).
///
/// Sendable: bytes are written only by the batch holding the only reference, before it is
/// shared, and are never changed afterwards.
@usableFromInline package final class RecordChunk: @unchecked Sendable {
    /// The memory, `capacity` bytes.
    @usableFromInline let base: UnsafeMutableRawPointer
    @usableFromInline let capacity: Int
    /// How many bytes from `base` hold records; the rest is free.
    @usableFromInline var used = 0

    @inlinable init(capacity: Int) {
        self.capacity = capacity
        base = UnsafeMutableRawPointer.allocate(byteCount: max(capacity, 1), alignment: 16)
    }

    deinit {
        base.deallocate()
    }
}

import LocalLMDBLMDB
import LocalLMDBStore

/// The writes of a custom migration step (`MigrationStep.custom`): encoded as they are made,
/// held in order, and committed in one transaction with the step's completion.
///
/// Each write is checked as `write(_:)` checks it (a model that cannot be encoded, an empty id,
/// a key too long) and throws then, so the step can stop at the write that cannot be stored.
public final class MigrationWrites {
    private let maxKeySize: Int
    private let encryption: StoreEncryption?
    /// The operations so far, in the order they were made.
    private var committed: [WriteOperation] = []
    /// The records written since the last delete, as one put.
    private var batch = RecordBatch()
    private var classes = ClassList()
    private var header: [UInt8] = []
    private var written: Set<ExactID> = []
    /// The types of the models written: their declared indexes are stored before the commit.
    private(set) var types: [ObjectIdentifier: any Persistable.Type] = [:]

    init(maxKeySize: Int, encryption: StoreEncryption?) {
        self.maxKeySize = maxKeySize
        self.encryption = encryption
    }

    /// Stores `record` (and the models its references hold), replacing what its id holds.
    public func write<T: Persistable>(_ record: Record<T>) throws {
        do throws(DatabaseError) {
            types[ObjectIdentifier(T.self)] = T.self
            try RecordEncoding.encode(
                record, into: &batch, header: &header, maxKeySize: maxKeySize, encryption: encryption, classes: &classes, written: &written)
        } catch { throw LocalDatabaseError(error) }
    }

    /// Stores each of `records`, in order.
    public func write<T: Persistable>(contentsOf records: [Record<T>]) throws {
        for record in records { try write(record) }
    }

    /// Stores `document` under `id`, as the class it names (its member `"object"`).
    public func write(_ document: DataObject, id: String) throws {
        do throws(DatabaseError) {
            guard !id.isEmpty else { throw .emptyID }
            guard let name = document.className, !name.isEmpty else {
                throw .unencodableValue(id: id, path: "object", reason: "the document names no class (its member \"object\")")
            }
            guard let bytes = document.encoded() else {
                let failure = document.encodingFailure
                throw .unencodableValue(id: id, path: failure?.path ?? "", reason: failure?.reason ?? "the document cannot be stored")
            }
            try bytes.withBytes { bytes throws(DatabaseError) in
                try RecordEncoding.encode(
                    id: id, className: name, document: bytes, into: &batch, header: &header, maxKeySize: maxKeySize, encryption: encryption)
            }
        } catch { throw LocalDatabaseError(error) }
    }

    /// Deletes the record stored under `id`, if any.
    public func delete(id: String) throws {
        do throws(DatabaseError) {
            let key = try RecordEncoding.recordKey(id, maxKeySize: maxKeySize)
            flush()
            committed.append(.delete(key))
        } catch { throw LocalDatabaseError(error) }
    }

    /// Ends the put under way: later writes come after the operation that follows.
    private func flush() {
        guard !batch.isEmpty else { return }
        committed.append(.put(batch, classes: classes.classes))
        batch = RecordBatch()
        classes = ClassList()
        written = []
    }

    /// Every write made, in order.
    func operations() -> [WriteOperation] {
        flush()
        return committed
    }
}

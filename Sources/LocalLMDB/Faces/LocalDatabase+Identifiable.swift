// Models that carry their own id (GarageStorage's `park`/`retrieve`): written, read and deleted
// without a `Record`. Each forwards to the `Record`-based method.
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

extension LocalDatabase {
    /// Writes `model` under its own id (`model.id.recordID`), replacing any record with that id.
    /// - Returns: `true` once the record is stored (failures throw).
    /// - Throws: As `write(_:)` with a `Record`.
    @discardableResult
    public nonisolated(nonsending) func write<T: Persistable & Identifiable>(_ model: T) async throws -> Bool where T.ID: RecordIdentifier {
        try await write(Record(model))
    }

    /// Writes `models` under their own ids, in one transaction (or in the open one). Later
    /// models win over earlier ones with the same id.
    /// - Returns: The number of models written.
    /// - Throws: As `write(contentsOf:)` with records; if any fails, nothing is written.
    @discardableResult
    public nonisolated(nonsending) func write<T: Persistable & Identifiable>(contentsOf models: [T]) async throws -> Int where T.ID: RecordIdentifier {
        try await write(contentsOf: models.map { Record($0) })
    }

    /// The object stored under `id`'s record id, as `T` or a subclass of it; nil when there is none.
    /// - Throws: As `read(id:)`.
    public nonisolated(nonsending) func read<T: Persistable & Identifiable>(_ type: T.Type, id: T.ID) async throws -> T? where T.ID: RecordIdentifier {
        try await read(id: id.recordID)
    }

    /// Deletes the record stored under `model`'s id (whatever its class).
    /// - Returns: Whether a record was deleted.
    @discardableResult
    public nonisolated(nonsending) func delete<T: Persistable & Identifiable>(_ model: T) async throws -> Bool where T.ID: RecordIdentifier {
        try await delete(id: model.id.recordID)
    }
}

extension SerializationDatabase {
    /// Writes `model` under its own id (`model.id.recordID`). Returns whether it was stored.
    @discardableResult
    public func write<T: Persistable & Identifiable>(_ model: T) -> Bool where T.ID: RecordIdentifier {
        write(Record(model))
    }

    /// Writes `models` under their own ids, in one transaction (or in the open one). Returns how
    /// many were written: all of them, or 0 when any failed (then none is written).
    @discardableResult
    public func write<T: Persistable & Identifiable>(contentsOf models: [T]) -> Int where T.ID: RecordIdentifier {
        write(contentsOf: models.map { Record($0) })
    }

    /// The object stored under `id`'s record id; nil when there is none or on failure.
    public func read<T: Persistable & Identifiable>(_ type: T.Type, id: T.ID) -> T? where T.ID: RecordIdentifier {
        read(id: id.recordID)
    }

    /// Deletes the record stored under `model`'s id. Returns whether one was deleted.
    @discardableResult
    public func delete<T: Persistable & Identifiable>(_ model: T) -> Bool where T.ID: RecordIdentifier {
        delete(id: model.id.recordID)
    }
}

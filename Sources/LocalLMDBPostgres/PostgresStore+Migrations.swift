import LocalLMDB

// MARK: Migrations

extension PostgresStore {
    /// Runs the migrations of `migrator` that this store has not had, as
    /// `LocalDatabase.migrate(with:progress:)` does on LMDB, with the same rules (see
    /// <doc:Migrations>):
    /// - one migrator at a time, from every process and machine: it holds an advisory lock of the
    ///   server's for the store while it runs (a migrator that dies, or whose connection breaks,
    ///   frees it); another waits for it, at most the busy timeout, then finds its work done;
    /// - each batch is one transaction that also records the store's position (the
    ///   `migrations` column of its row in `locallmdb_stores`), so a migrator killed half-way
    ///   goes on from its last batch, and no record is transformed twice;
    /// - while a migration is under way, every other write is refused (`migrationInProgress`),
    ///   from every process; a process whose migrator does not know a migration the store has
    ///   had writes nothing (`unknownMigration`, `migratorNotRun`);
    /// - the first batch raises the store's schema version, so versions of LocalLMDB that know
    ///   nothing of migrations refuse the store rather than write old shapes into it;
    /// - a migration's batches are commits like any other: observers and `PullReplicator`s
    ///   receive the migrated records.
    ///
    /// Custom steps are given the store's `LocalDatabase` face, which reads and writes through
    /// this store's engine.
    /// - Returns: The names of the migrations this call completed, in order.
    @discardableResult
    public nonisolated(nonsending) func migrate(
        with migrator: DatabaseMigrator, progress: ((MigrationProgress) -> Void)? = nil
    ) async throws -> [String] {
        try await face.migrate(with: migrator, progress: progress)
    }

    /// The migrations this store has had, in the order they completed, and the one under way.
    public nonisolated(nonsending) func migrationStatus() async throws -> MigrationStatus {
        try await face.migrationStatus()
    }
}

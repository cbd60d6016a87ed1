import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore

/// The options an engine opens a database directory with: what the public
/// `DatabaseConfiguration` says, in the engine's terms.
package struct EngineConfiguration: Sendable, Equatable {
    package var sync: SyncMode = .full
    package var busyTimeout: Duration = .seconds(30)
    package var maximumMapSize: Int = 1 << 40
    package var maxReaders: Int = 256
    package var readOnly = false
    package var changeLogCommits = 10_000
    package var changeLogBytes = 64 << 20
    /// The most records of a batch applied in one part (`BatchStream`).
    package var batchPartRecords = BatchStream.partRecords
    /// The encryption of values at rest; nil: none.
    package var encryption: StoreEncryption?

    package init() {}

    /// Why a database opened with `self` cannot be shared with a caller asking for `other`;
    /// nil when they agree on everything two handles of one directory must share.
    func incompatibility(with other: EngineConfiguration) -> String? {
        if sync != other.sync { return "durability \(sync), not \(other.sync)" }
        if readOnly != other.readOnly { return readOnly ? "opened read-only" : "opened for writing" }
        if maximumMapSize != other.maximumMapSize { return "maximum map size \(maximumMapSize), not \(other.maximumMapSize)" }
        if maxReaders != other.maxReaders { return "\(maxReaders) readers, not \(other.maxReaders)" }
        if changeLogCommits != other.changeLogCommits || changeLogBytes != other.changeLogBytes {
            return "a change log of \(changeLogCommits) commits and \(changeLogBytes) bytes, not \(other.changeLogCommits) and \(other.changeLogBytes)"
        }
        if encryption != other.encryption {
            let describe = { (encryption: StoreEncryption?) in encryption.map { "encryption under the key '\($0.cipher.sealingKeyID)'" } ?? "no encryption" }
            return "\(describe(encryption)), not \(describe(other.encryption))"
        }
        return nil
    }
}

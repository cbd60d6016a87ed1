import LocalLMDBJSON
import LocalLMDBLMDB
import Foundation

// The store's class names: the `classes` database, and the claims types make on names.
extension RecordStore {
    /// The `classes` database, for lookups during reads.
    package var classTable: ClassTable { ClassTable(environment: environment, database: classes) }

    /// Records each class's owner, unless it is recorded already.
    /// - Throws: `classNameConflict` when another type owns one of the names and the writing
    ///   type does not adopt it (nothing is changed then: the transaction is abandoned).
    func claim(_ storedClasses: [StoredClass], in transaction: Transaction) throws(DatabaseError) {
        for storedClass in storedClasses {
            let existing = try classTable.row(named: storedClass.name, in: transaction)
            guard try storedClass.claim(over: existing) else { continue }
            if existing == nil, !storedClass.copied {
                try storedClass.checkSpelling(againstStored: try storedNames(spelledLike: storedClass.name, in: transaction))
            }
            try StorageKey(storedClass.name, maxKeySize: environment.maxKeySize).withBytes { key throws(DatabaseError) in
                try storedClass.encoded.withBytes { bytes throws(DatabaseError) in
                    try transaction.put(classes, key, bytes)
                }
            }
            if existing == nil { try recordSpelling(of: storedClass.name, in: transaction) }
        }
    }

    /// Throws `classNameConflict` when a type other than `owner` owns `owner`'s name (and
    /// `owner` does not adopt it): records under that name are not `owner`'s to read or delete.
    func checkOwner(_ owner: StoredClass, in transaction: Transaction) throws(DatabaseError) {
        guard !owner.adopts, case let .other(existing) = try classTable.ownership(of: owner, in: transaction) else { return }
        try owner.checkOwner(existing: existing)
    }
}

import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// The records that references reach from records read in a transaction, copied out of it
/// with them: the models are restored on the caller's thread after the transaction's snapshot
/// is gone, and their references resolve among these (`ReadScratch.prefetched`), as they
/// would have in the snapshot.
///
/// Every id a reference may name is followed (`RecordReference.referencedIDs`: a superset of
/// the references models decode), so an id absent here is a record absent from the snapshot.
struct ReferencedRecords: Sendable {
    /// The records found, by id (exact: canonically equivalent ids are two records).
    private(set) var records: [ExactID: DecodedRecord.Detached] = [:]
    /// The records found that could not be read (corrupt, or not decryptable), by id: the read
    /// throws their error if, and only if, a model reads them (something else in a document may
    /// merely look like a reference to them).
    private(set) var failures: [ExactID: DatabaseError] = [:]

    /// The records reached from `roots` in `classes`' snapshot, transitively; nil when the roots
    /// refer to nothing.
    static func reached(from roots: [DecodedRecord], in classes: ClassLookup) throws(DatabaseError) -> ReferencedRecords? {
        var waiting: [String] = []
        for root in roots { waiting.append(contentsOf: RecordReference.referencedIDs(in: root.object)) }
        guard !waiting.isEmpty else { return nil }
        var found = ReferencedRecords()
        var looked: Set<ExactID> = []
        while let id = waiting.popLast() {
            guard looked.insert(ExactID(id)).inserted else { continue }
            let record: DecodedRecord?
            do throws(DatabaseError) {
                record = try classes.record(id: id)
            } catch {
                found.failures[ExactID(id)] = error
                continue
            }
            guard let record else { continue }
            found.records[ExactID(id)] = record.detached()
            waiting.append(contentsOf: RecordReference.referencedIDs(in: record.object))
        }
        return found
    }
}

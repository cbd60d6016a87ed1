/// The top-level members of a stored document that one model reads: what the model "knows".
///
/// A record a model writes carries its model's `KnownMembers` (`RecordBatch.append(…known:)`).
/// On a synchronized database, the write keeps every top-level member of the stored document
/// that the new document lacks and the model does not read: a field that a newer version of the
/// app added, on another device, survives an older version's write
/// (`RecordStore.keepingUnknownMembers`). A member the model reads and did not write (a nil
/// optional) is removed, as on any database.
///
/// Names are member names as stored (`FieldKey.stored`), unescaped. Immutable, and compared by
/// identity in a batch: each model type has one, made once per process.
@usableFromInline package final class KnownMembers: Sendable {
    /// The member names the model reads.
    package let names: Set<String>

    package init(_ names: Set<String>) {
        self.names = names
    }
}

import Foundation
@testable import LocalLMDB
import LocalLMDBLMDB
import Testing

/// Errors the source throws: they reach the caller as they are.
private struct SourceBroke: Error, Equatable {}

@Suite("Importing documents (localdb import-sqlite's path)")
struct ImportDocumentsTests {
    /// A transaction that fails stops the import with its error: it is not a bad document, and
    /// nothing of its batch is stored (the import's own reviewer found it reported as one and
    /// stored anyway).
    @Test func aFailedTransactionStopsTheImport() async throws {
        try await withTemporaryDirectory { directory in
            await (try LocalDatabase(directory: directory)).close()
            var configuration = DatabaseConfiguration()
            configuration.readOnly = true
            let readOnly = try LocalDatabase(directory: directory, configuration: configuration)
            let invalid = Locked<[String]>([])
            let counter = Locked(0)
            await #expect(throws: LocalDatabaseError.readOnly) {
                _ = try await readOnly.importDocuments(batchSize: 2, next: {
                    let index = counter.withLock { count in count += 1; return count }
                    return index <= 5 ? ("r\(index)", "T", Array(#"{"n":1}"#.utf8)) : nil
                }, invalid: { id, reason in invalid.withLock { $0.append(id + ": " + reason) } })
            }
            #expect(invalid.withLock { $0 }.isEmpty)
        }
    }

    /// An id given twice is reported at its second time and stored once; the counts say what
    /// was stored; an error of the source is rethrown as it was.
    @Test func repeatedIDsAndSourceErrors() async throws {
        try await withTemporaryDirectory { directory in
            let database = try LocalDatabase(directory: directory)
            let documents = [("a", "T", #"{"n":1}"#), ("b", "T", #"{"n":2}"#), ("a", "U", #"{"n":3}"#), ("c", "T", "[1]")]
            let remaining = Locked(documents[...])
            let invalid = Locked<[String]>([])
            let stored = try await database.importDocuments(batchSize: 10, next: {
                remaining.withLock { rest in rest.popFirst().map { ($0.0, $0.1, Array($0.2.utf8)) } }
            }, invalid: { id, reason in invalid.withLock { $0.append(id + ": " + reason) } })
            #expect(stored == 2)
            #expect(invalid.withLock { $0 }.map { $0.prefix(2) } == ["a:", "c:"])
            #expect(try await database.storedDocument(id: "a")?.json == #"{"n":1}"#)

            await #expect(throws: SourceBroke()) {
                _ = try await database.importDocuments(next: { throw SourceBroke() }, invalid: { _, _ in })
            }
        }
    }
}

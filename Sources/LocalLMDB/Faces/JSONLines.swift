import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

// Export and import as JSON Lines (`RecordLine`): one record a line,
// `{"id":"…","class":"…","value":{…}}`, the value being the stored document itself.

/// How far an export or import has come: lines (records) written or read so far.
public struct LinesProgress: Sendable, Equatable {
    /// Records exported, or lines of the file read (and stored, once committed) so far.
    public let lines: Int
    /// For an import, the last line stored by a committed transaction (0 before the first).
    public let linesCommitted: Int
}

/// Writes lines to a new file: under a hidden name beside it, renamed once complete and synced;
/// or to an open file handle (standard output), as they come.
final class LineFile: @unchecked Sendable {
    // Confinement: used by the one thread running the export.
    private let handle: FileHandle
    /// The hidden file and the name it gets once complete; nil when streaming to a handle.
    private let partial: URL?
    private let destination: URL?
    private var writer = JSONWriter()
    private(set) var written = 0
    /// Lines are written out in chunks of about this many bytes.
    private static let chunk = 1 << 20

    init(creating destination: URL) throws(DatabaseError) {
        let destination = destination.standardizedFileURL
        guard !FileManager.default.fileExists(atPath: destination.path) else {
            throw .invalidDirectory(path: destination.path, reason: "it exists: an export is written to a new file")
        }
        let partial = destination.deletingLastPathComponent().appendingPathComponent(".\(destination.lastPathComponent).partial-\(UUID().uuidString)")
        self.partial = partial
        guard FileManager.default.createFile(atPath: partial.path, contents: nil, attributes: [.posixPermissions: 0o600]),
              let handle = FileHandle(forWritingAtPath: partial.path) else {
            throw .invalidDirectory(path: destination.path, reason: "the export file cannot be created there")
        }
        self.handle = handle
        self.destination = destination
    }

    /// Lines written to `handle` as they come, in chunks; `finish` writes the last and leaves the
    /// handle open.
    init(streamingTo handle: FileHandle) {
        self.handle = handle
        partial = nil
        destination = nil
    }

    private var name: String { partial?.path ?? "the output" }

    func append(id: String, className: String, document: UnsafeRawBufferPointer) throws(DatabaseError) {
        RecordLine.append(id: id, className: className, document: document, to: &writer)
        written += 1
        if writer.byteCount >= Self.chunk { try flush() }
    }

    private func flush() throws(DatabaseError) {
        do {
            try handle.write(contentsOf: writer.bytes)
        } catch {
            throw .storage(operation: "write '\(name)'", code: Int32((error as NSError).code), message: error.localizedDescription)
        }
        writer = JSONWriter()
    }

    /// Writes what is left, syncs, and gives the file its name.
    func finish() throws(DatabaseError) {
        try flush()
        guard let partial, let destination else { return }
        do {
            try handle.synchronize()
            try handle.close()
            try FileManager.default.moveItem(at: partial, to: destination)
        } catch {
            throw .storage(operation: "finish '\(destination.path)'", code: Int32((error as NSError).code), message: error.localizedDescription)
        }
    }

    /// Removes the partial file (after a failure).
    func discard() {
        guard let partial else { return }
        try? handle.close()
        try? FileManager.default.removeItem(at: partial)
    }
}

/// The export's read: every record of the classes (all when nil) to `file`.
struct ExportLines: PlainRead {
    let classKeys: [StorageKey]?
    let file: LineFile
    let progress: (@Sendable (LinesProgress) -> Void)?

    func snapshot<Snapshot: RecordSnapshot>(_ snapshot: Snapshot) throws(DatabaseError) -> Int {
        try snapshot.forEachDocument(ofClasses: classKeys) { id, className, document throws(DatabaseError) in
            try file.append(id: id, className: className, document: document)
            if file.written % 10_000 == 0 { progress?(LinesProgress(lines: file.written, linesCommitted: file.written)) }
        }
        progress?(LinesProgress(lines: file.written, linesCommitted: file.written))
        return file.written
    }
}

/// A record to import (`LocalDatabase.importDocuments`): its id, class name and JSON document
/// (any whitespace around it).
package typealias ImportedDocument = (id: String, className: String, json: [UInt8])

/// Export and import, for both faces: blocking, on the calling thread.
enum JSONLines {
    /// The longest line an import reads: a longer one is refused without being held whole.
    static let maximumLineBytes = 256 << 20

    /// Exports the records of `types` (every record when nil) from `engine` to the new file
    /// `destination`; returns how many.
    static func export(
        _ engine: FaceEngine, to destination: URL, classKeys: [StorageKey]?, decrypting: Bool,
        progress: (@Sendable (LinesProgress) -> Void)?
    ) throws(DatabaseError) -> Int {
        guard engine.encryption == nil || decrypting else { throw .exportWouldDecrypt(path: engine.path) }
        return try export(engine, to: try LineFile(creating: destination), classKeys: classKeys, progress: progress)
    }

    /// `export` to `file`.
    static func export(
        _ engine: FaceEngine, to file: LineFile, classKeys: [StorageKey]?, progress: (@Sendable (LinesProgress) -> Void)?
    ) throws(DatabaseError) -> Int {
        guard !engine.transactionActive else {
            file.discard()
            throw .transactionAlreadyActive
        }
        do throws(DatabaseError) {
            let count = try engine.writer.readBlocking(ExportLines(classKeys: classKeys, file: file, progress: progress), "export")
            try file.finish()
            return count
        } catch {
            file.discard()
            throw error
        }
    }

    /// The class keys of `types` (each one's current and legacy names); nil for every record.
    static func classKeys(_ types: [any Persistable.Type]?, maxKeySize: Int) -> [StorageKey]? {
        types.map { types in types.flatMap { RecordEncoding.typeKeys($0, maxKeySize: maxKeySize) } }
    }

    /// Imports the lines of `source` from line `firstLine` into `engine`, `batchSize` records a
    /// transaction; returns how many records were stored.
    /// - Throws: `invalidLine` for the first line that is not a record (see `RecordLine`), with
    ///   the last line committed: lines before the batch holding it are stored, none of it is.
    static func importLines(
        _ engine: FaceEngine, from source: URL, batchSize: Int, firstLine: Int, lineLimit: Int = maximumLineBytes,
        progress: (@Sendable (LinesProgress) -> Void)?
    ) throws(DatabaseError) -> Int {
        guard let handle = FileHandle(forReadingAtPath: source.path) else {
            throw .invalidDirectory(path: source.path, reason: "the file cannot be opened for reading")
        }
        defer { try? handle.close() }
        let batches = ImportBatches(engine, batchSize: batchSize, committedLine: firstLine - 1, progress: progress)
        var lineNumber = 0
        func take(_ line: UnsafeRawBufferPointer) throws(DatabaseError) {
            lineNumber += 1
            guard lineNumber >= firstLine, line.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }) else { return }
            let parsed: RecordLine.Parsed
            do throws(RecordLineError) {
                parsed = try RecordLine.parse(line)
            } catch {
                throw .invalidLine(line: lineNumber, reason: error.reason, linesCommitted: batches.committedLine)
            }
            guard try batches.add(id: parsed.id, className: parsed.className, document: parsed.document, line: lineNumber) else {
                throw .invalidLine(
                    line: lineNumber, reason: "the id '\(parsed.id)' is on an earlier line too (an import stores each id once)",
                    linesCommitted: batches.committedLine)
            }
        }
        var pending: [UInt8] = []
        // Never more than one line (at most `lineLimit` bytes) and one chunk held at once.
        let tooLong = { () -> DatabaseError in
            .invalidLine(line: lineNumber + 1, reason: "the line is longer than \(lineLimit) bytes", linesCommitted: batches.committedLine)
        }
        while true {
            let chunk: Data
            do {
                chunk = try handle.read(upToCount: 1 << 20) ?? Data()
            } catch {
                throw .storage(operation: "read '\(source.path)'", code: Int32((error as NSError).code), message: error.localizedDescription)
            }
            if chunk.isEmpty { break }
            var start = chunk.startIndex
            while let newline = chunk[start...].firstIndex(of: 0x0A) {
                pending.append(contentsOf: chunk[start..<newline])
                start = chunk.index(after: newline)
                guard pending.count <= lineLimit else { throw tooLong() }
                try pending.withBytes { line throws(DatabaseError) in try take(line) }
                pending.removeAll(keepingCapacity: true)
            }
            pending.append(contentsOf: chunk[start...])
            guard pending.count <= lineLimit else { throw tooLong() }
        }
        if !pending.isEmpty { try pending.withBytes { line throws(DatabaseError) in try take(line) } }
        try batches.commit()
        return batches.stored
    }

    /// Imports the documents `next` gives (until it gives nil) into `engine`, `batchSize` a
    /// transaction, as `importLines` does; `invalid` is told of each document that is not a
    /// JSON object (or repeats a key), which is not stored, and the import goes on. Returns how
    /// many were stored.
    static func importDocuments(
        _ engine: FaceEngine, batchSize: Int, next: () throws(DatabaseError) -> ImportedDocument?,
        invalid: (_ id: String, _ reason: String) -> Void, progress: (@Sendable (LinesProgress) -> Void)?
    ) throws(DatabaseError) -> Int {
        let batches = ImportBatches(engine, batchSize: batchSize, committedLine: 0, progress: progress)
        var count = 0
        while let document = try next() {
            count += 1
            guard !document.id.isEmpty, !document.className.isEmpty else {
                invalid(document.id, document.id.isEmpty ? "the id is empty" : "the class name is empty")
                continue
            }
            // The document is checked here, a problem of its own reported; storing it (and a
            // transaction's failure) stops the import.
            let checked = document.json.withUnsafeBytes { json -> (range: Range<Int>?, problem: String?) in
                do throws(DatabaseError) {
                    let summary = try JSONValidator.validateObject(json)
                    guard !summary.mayRepeatKeys else { return (nil, "a key appears more than once in an object") }
                    let end = json.lastIndex { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }.map { $0 + 1 } ?? json.count
                    return (summary.start..<end, nil)
                } catch {
                    if case let .invalidJSON(reason, offset) = error { return (nil, "invalid JSON at byte \(offset): \(reason)") }
                    return (nil, error.description)
                }
            }
            guard let range = checked.range else {
                invalid(document.id, checked.problem ?? "not a JSON object")
                continue
            }
            let added: Result<Bool, DatabaseError> = document.json.withUnsafeBytes { json in
                Result { () throws(DatabaseError) in
                    try batches.add(id: document.id, className: document.className, document: UnsafeRawBufferPointer(rebasing: json[range]), line: count)
                }
            }
            if try !added.get() { invalid(document.id, "the id appears more than once (the first one is stored)") }
        }
        try batches.commit()
        return batches.stored
    }
}

/// An id as 128 bits: two hashes of its UTF-8 bytes with independent random seeds (this
/// process's `Hasher`, and the same after a random salt). The bytes, not the `String`: ids that
/// differ only in Unicode normalization are two records, which `String`'s hash would merge. Two different ids of one import share a digest with a
/// probability of about n²/2¹²⁹ (1e-27 for a billion ids): far below a disk's error rate. The
/// cost of a collision would be a refused record, never a lost one.
struct IDDigest: Hashable {
    let first: Int
    let second: Int

    private static let salt = UInt64.random(in: 0...UInt64.max)

    init(_ id: String) {
        var hasher = Hasher()
        var salted = Hasher()
        salted.combine(Self.salt)
        var id = id
        id.withUTF8 { bytes in
            hasher.combine(bytes: UnsafeRawBufferPointer(bytes))
            salted.combine(bytes: UnsafeRawBufferPointer(bytes))
        }
        first = hasher.finalize()
        second = salted.finalize()
    }
}

/// Records on their way into a database, stored `batchSize` a transaction: the one rule of
/// every import (lines or documents).
final class ImportBatches {
    private let engine: FaceEngine
    private let batchSize: Int
    private let progress: (@Sendable (LinesProgress) -> Void)?
    private var batch = RecordBatch()
    private var header: [UInt8] = []
    private var lastLine = 0
    /// The ids this import has stored (or is about to, in the batch), as 128-bit digests
    /// (`IDDigest`): 16 bytes an id, whatever its length.
    private var seen: Set<IDDigest> = []
    /// Records stored by committed transactions.
    private(set) var stored = 0
    /// The last line (or document) a committed transaction stored.
    private(set) var committedLine: Int

    init(_ engine: FaceEngine, batchSize: Int, committedLine: Int, progress: (@Sendable (LinesProgress) -> Void)?) {
        self.engine = engine
        self.batchSize = max(1, batchSize)
        self.committedLine = committedLine
        self.progress = progress
    }

    /// Adds the record of line `line`, whose document is checked; commits when the batch is full.
    /// Returns false, adding nothing, when the import has stored the id already: an import
    /// never merges two of its records into one (it remembers a 16-byte digest of every id it
    /// stores). A record already in the database is replaced, as a write replaces it.
    func add(id: String, className: String, document: UnsafeRawBufferPointer, line: Int) throws(DatabaseError) -> Bool {
        guard seen.insert(IDDigest(id)).inserted else { return false }
        lastLine = line
        try RecordEncoding.encode(
            id: id, className: className, document: document, into: &batch, header: &header,
            maxKeySize: engine.maxKeySize, encryption: engine.encryption)
        if batch.count >= batchSize { try commit() }
        return true
    }

    /// Stores the batch in one transaction.
    func commit() throws(DatabaseError) {
        guard !batch.isEmpty else { return }
        stored += try engine.writer.performBlocking(.put(batch, classes: []), "import")
        batch = RecordBatch()
        committedLine = lastLine
        progress?(LinesProgress(lines: lastLine, linesCommitted: committedLine))
    }
}

/// Runs `body` on a thread of its own and waits for it without holding a cooperative-pool
/// thread: for work that blocks for long (files, and waits for the writer thread).
func onThreadOfItsOwn<R: Sendable>(_ name: String, _ body: @escaping @Sendable () throws(DatabaseError) -> R) async throws(DatabaseError) -> R {
    let result: Result<R, DatabaseError> = await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: Result { () throws(DatabaseError) in try body() }) }
        thread.name = name
        thread.start()
    }
    return try result.get()
}

extension LocalDatabase {
    /// Writes the records of `types` (their current and legacy class names; every record when
    /// nil) to the new file `destination`, as JSON Lines: `{"id":"…","class":"…","value":{…}}`,
    /// one record a line, the value being the stored document byte for byte. The records come
    /// from one consistent snapshot, streamed: they are never all in memory at once.
    ///
    /// The file is written under a hidden name beside `destination` and renamed once complete
    /// and synced: an export that fails leaves no file named `destination`.
    /// - Parameters:
    ///   - destination: A file that does not exist yet, in an existing directory.
    ///   - types: The types to export; nil (the default) for every record.
    ///   - decrypting: Must be true to export an encrypted database, whose values the file then
    ///     holds in the clear (a backup keeps them encrypted).
    ///   - progress: Called every 10,000 records and at the end, on the export's thread.
    /// - Returns: How many records were written.
    /// - Throws: `exportWouldDecrypt`; `invalidDirectory` when `destination` exists;
    ///   `transactionAlreadyActive` inside this database's transaction; `corruptRecord` or
    ///   `undecryptableRecord` for a record that cannot be read (no file is left).
    @discardableResult
    public nonisolated(nonsending) func export(
        to destination: URL, types: [any Persistable.Type]? = nil, decrypting: Bool = false,
        progress: (@Sendable (LinesProgress) -> Void)? = nil
    ) async throws -> Int {
        let engine = self.engine
        let classKeys = JSONLines.classKeys(types, maxKeySize: engine.maxKeySize)
        do throws(DatabaseError) {
            return try await onThreadOfItsOwn("LocalLMDB export") { () throws(DatabaseError) in
                try JSONLines.export(engine, to: destination, classKeys: classKeys, decrypting: decrypting, progress: progress)
            }
        } catch { throw LocalDatabaseError(error) }
    }

    /// Stores the records of the JSON Lines file `source` (as `export` writes them), replacing
    /// records with the same ids; each record keeps its id, class name and document bytes. An
    /// id on two lines of the file is refused at the second (`invalidLine`): an import never
    /// merges two of its records into one.
    ///
    /// The transaction rule: every `batchSize` records are one transaction. A line that is not
    /// a record stops the import with `LocalDatabaseError.invalidLine`, naming the line and the
    /// last line stored: the batches before it are stored, nothing of its batch is, and the
    /// import resumes from the next line with `startingAtLine`. (All-or-nothing would hold a
    /// million-record file in one transaction; inside this database's own transaction, which
    /// the batches then join, it is all-or-nothing.) Empty lines are skipped.
    /// - Parameters:
    ///   - source: A JSON Lines file.
    ///   - batchSize: Records a transaction (at least 1).
    ///   - startingAtLine: The first line to import (1-based); earlier lines are read past.
    ///   - progress: Called after each committed batch, on the import's thread.
    /// - Returns: How many records were stored.
    /// - Throws: `invalidLine`; `invalidDirectory` when `source` cannot be read; what a write
    ///   throws (`uniqueIndexViolation`, `storage`, …), with the batches before stored.
    @discardableResult
    public nonisolated(nonsending) func importLines(
        from source: URL, batchSize: Int = 10_000, startingAtLine: Int = 1, progress: (@Sendable (LinesProgress) -> Void)? = nil
    ) async throws -> Int {
        let engine = self.engine
        do throws(DatabaseError) {
            return try await onThreadOfItsOwn("LocalLMDB import") { () throws(DatabaseError) in
                try JSONLines.importLines(engine, from: source, batchSize: batchSize, firstLine: max(1, startingAtLine), progress: progress)
            }
        } catch { throw LocalDatabaseError(error) }
    }
}

extension SerializationDatabase {
    /// `LocalDatabase.export(to:types:decrypting:progress:)`, blocking the calling thread; nil
    /// on failure (`lastError` says why).
    @discardableResult
    public func export(
        to destination: URL, types: [any Persistable.Type]? = nil, decrypting: Bool = false,
        progress: (@Sendable (LinesProgress) -> Void)? = nil
    ) -> Int? {
        run(nil) { engine throws(DatabaseError) in
            try JSONLines.export(
                engine, to: destination, classKeys: JSONLines.classKeys(types, maxKeySize: engine.maxKeySize), decrypting: decrypting,
                progress: progress)
        }
    }

    /// `LocalDatabase.importLines(from:batchSize:startingAtLine:progress:)`, blocking the
    /// calling thread; nil on failure (`lastError` says why, and which lines were stored).
    @discardableResult
    public func importLines(
        from source: URL, batchSize: Int = 10_000, startingAtLine: Int = 1, progress: (@Sendable (LinesProgress) -> Void)? = nil
    ) -> Int? {
        run(nil) { engine throws(DatabaseError) in
            try JSONLines.importLines(engine, from: source, batchSize: batchSize, firstLine: max(1, startingAtLine), progress: progress)
        }
    }
}

extension LocalDatabase {
    /// `export(to:types:decrypting:progress:)` written to `handle` as it goes (for `localdb
    /// dump` to standard output), of the records stored under `classNames` (exactly those names;
    /// every record when nil). Returns how many records were written.
    package nonisolated(nonsending) func export(
        to handle: FileHandle, classNames: [String]?, decrypting: Bool = false, progress: (@Sendable (LinesProgress) -> Void)? = nil
    ) async throws -> Int {
        let engine = self.engine
        let classKeys = classNames.map { $0.map { StorageKey($0, maxKeySize: engine.maxKeySize) } }
        do throws(DatabaseError) {
            guard engine.encryption == nil || decrypting else { throw .exportWouldDecrypt(path: engine.path) }
            return try await onThreadOfItsOwn("LocalLMDB export") { () throws(DatabaseError) in
                try JSONLines.export(engine, to: LineFile(streamingTo: handle), classKeys: classKeys, progress: progress)
            }
        } catch { throw LocalDatabaseError(error) }
    }

    /// Stores the documents `next` gives, until it gives nil, `batchSize` records a transaction
    /// (the rule of `importLines`), each under its id and class name with its JSON document
    /// as it is (whitespace around it trimmed). A document that is not a JSON object, repeats
    /// a key, or has an id given before in this import, is not stored: `invalid` is told its id
    /// and why, and the import goes on. An error `next` throws stops the import and is
    /// rethrown as it is; batches committed before it stay, nothing of its batch is stored.
    /// `next` and `invalid` run on the import's own thread. Returns how many were stored.
    package nonisolated(nonsending) func importDocuments(
        batchSize: Int = 10_000, next: @escaping @Sendable () throws -> ImportedDocument?,
        invalid: @escaping @Sendable (_ id: String, _ reason: String) -> Void, progress: (@Sendable (LinesProgress) -> Void)? = nil
    ) async throws -> Int {
        let engine = self.engine
        // An error of the source (`next`) reaches the caller as it was thrown.
        final class SourceError: @unchecked Sendable {
            var error: (any Error)?
        }
        let source = SourceError()
        do throws(DatabaseError) {
            return try await onThreadOfItsOwn("LocalLMDB import") { () throws(DatabaseError) in
                try JSONLines.importDocuments(engine, batchSize: batchSize, next: { () throws(DatabaseError) in
                    do {
                        return try next()
                    } catch {
                        source.error = error
                        throw .transactionFailed(reason: "the records to import could not be read: \(error)")
                    }
                }, invalid: invalid, progress: progress)
            }
        } catch {
            if let thrown = source.error { throw thrown }
            throw LocalDatabaseError(error)
        }
    }
}

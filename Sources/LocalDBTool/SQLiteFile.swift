import CSQLite
import Foundation

/// An error of SQLite, or of a file that is not what the import reads.
package struct SQLiteError: Error, CustomStringConvertible {
    package let description: String
}

/// A SQLite database file, opened with the system's SQLite: the tool reads SwiftLocal's and
/// SwiftSerialization's `record(id, objectName, data)` table from it (`SwiftLocalRecords`), and
/// the tests write such files with it.
///
/// Confinement: used by one thread at a time (SQLite's connection is not shared).
package final class SQLiteFile: @unchecked Sendable {
    private let handle: OpaquePointer

    /// Opens `path`: read-only, or creating it for writing.
    package init(path: String, readOnly: Bool) throws {
        var handle: OpaquePointer?
        let flags = readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        let status = sqlite3_open_v2(path, &handle, flags, nil)
        guard status == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(handle)
            throw SQLiteError(description: "cannot open '\(path)' as SQLite: \(message)")
        }
        self.handle = handle
    }

    deinit {
        sqlite3_close(handle)
    }

    private var message: String { String(cString: sqlite3_errmsg(handle)) }

    /// Runs `sql` (statements without results).
    package func execute(_ sql: String) throws {
        guard sqlite3_exec(handle, sql, nil, nil, nil) == SQLITE_OK else { throw SQLiteError(description: message) }
    }

    /// A prepared statement of this file.
    package final class Statement {
        fileprivate let statement: OpaquePointer
        private let file: SQLiteFile

        fileprivate init(_ sql: String, in file: SQLiteFile) throws {
            var statement: OpaquePointer?
            guard sqlite3_prepare_v2(file.handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
                throw SQLiteError(description: file.message)
            }
            self.statement = statement
            self.file = file
        }

        deinit {
            sqlite3_finalize(statement)
        }

        /// Binds `values` (text or blob bytes; nil for NULL) to the parameters, runs the
        /// statement to its end and resets it.
        package func run(_ values: [Value?]) throws {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
            for (index, value) in values.enumerated() {
                let position = Int32(index + 1)
                let status: Int32
                switch value {
                case nil:
                    status = sqlite3_bind_null(statement, position)
                case let .text(bytes)?:
                    status = bytes.withUnsafeBytes { sqlite3_bind_text(statement, position, $0.baseAddress, Int32($0.count), Self.transient) }
                case let .blob(bytes)?:
                    status = bytes.withUnsafeBytes { sqlite3_bind_blob(statement, position, $0.baseAddress, Int32($0.count), Self.transient) }
                }
                guard status == SQLITE_OK else { throw SQLiteError(description: file.message) }
            }
            while true {
                let status = sqlite3_step(statement)
                if status == SQLITE_DONE { break }
                guard status == SQLITE_ROW else { throw SQLiteError(description: file.message) }
            }
        }

        /// The next row, as the bytes of each column (nil for NULL); nil after the last.
        package func next() throws -> [[UInt8]?]? {
            let status = sqlite3_step(statement)
            if status == SQLITE_DONE { return nil }
            guard status == SQLITE_ROW else { throw SQLiteError(description: file.message) }
            return (0..<sqlite3_column_count(statement)).map { column in
                guard sqlite3_column_type(statement, column) != SQLITE_NULL else { return nil }
                // Text is read as the bytes stored (blob), so nothing is converted on the way.
                let count = Int(sqlite3_column_bytes(statement, column))
                guard let bytes = sqlite3_column_blob(statement, column), count > 0 else { return [] }
                return [UInt8](UnsafeRawBufferPointer(start: bytes, count: count))
            }
        }

        private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
    }

    /// A value to bind.
    package enum Value {
        case text([UInt8])
        case blob([UInt8])
    }

    /// `sql` prepared.
    package func prepare(_ sql: String) throws -> Statement {
        try Statement(sql, in: self)
    }
}

/// The records of a SwiftLocal (or SwiftSerialization) SQLite database: its table
/// `record(id TEXT PRIMARY KEY, objectName TEXT, data TEXT)`, each row a record id, the class
/// name it was stored under, and its JSON document.
package final class SwiftLocalRecords: @unchecked Sendable {
    private let file: SQLiteFile
    private let rows: SQLiteFile.Statement
    /// Rows read so far.
    package private(set) var rowsRead = 0

    /// Opens the table of the file `path`, read-only.
    /// - Throws: `SQLiteError` when the file is not SQLite, or has no such table.
    package init(path: String) throws {
        guard FileManager.default.isReadableFile(atPath: path) else { throw SQLiteError(description: "cannot read '\(path)'") }
        file = try SQLiteFile(path: path, readOnly: true)
        do {
            rows = try file.prepare("SELECT id, objectName, data FROM record ORDER BY rowid")
        } catch {
            throw SQLiteError(description: "'\(path)' is not a SwiftLocal database (no table record(id, objectName, data)): \(error)")
        }
    }

    /// A row of the table: the record, or why it cannot be imported as it is.
    package enum Row {
        case record(id: String, className: String, json: [UInt8])
        case invalid(id: String, reason: String)
    }

    /// The next row; nil after the last.
    package func next() throws -> Row? {
        guard let columns = try rows.next() else { return nil }
        rowsRead += 1
        let id = columns[0].flatMap { String(validating: $0, as: UTF8.self) }
        guard let id, !id.isEmpty else {
            // Named by its bytes in hex: the bytes are not text, and two such ids must not read alike.
            let shown = columns[0].map { $0.isEmpty ? "<empty id, row \(rowsRead) read>" : "0x" + $0.map { String(format: "%02x", $0) }.joined() }
            return .invalid(id: shown ?? "<NULL id, row \(rowsRead) read>", reason: "the id is empty, NULL or not UTF-8")
        }
        guard let className = columns[1].flatMap({ String(validating: $0, as: UTF8.self) }), !className.isEmpty else {
            return .invalid(id: id, reason: "the objectName is empty, NULL or not UTF-8")
        }
        guard let json = columns[2] else { return .invalid(id: id, reason: "the data is NULL") }
        return .record(id: id, className: className, json: json)
    }
}

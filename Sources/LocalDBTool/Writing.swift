import ArgumentParser
import Foundation
import LocalLMDB

struct Dump: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Writes every record (or some types') as JSON Lines: {\"id\", \"class\", \"value\"} a line, from one snapshot.",
        discussion: """
            To standard output, or to a new file with --output (written under a hidden name, renamed once complete).
            Examples: localdb dump ./data > records.jsonl
                      localdb dump ./data --type Person --output people.jsonl
            """)

    @OptionGroup var target: DatabaseArgument
    @Option(help: "A new file to write (standard output when left out).", completion: .file()) var output: String?
    @Option(help: "Only records stored under this class name (repeatable).") var type: [String] = []
    @Flag(help: "Write an encrypted database's values in the clear (with --key-file).") var decrypt = false

    func run() async throws {
        try await reporting {
            let database = try target.openReadOnly()
            let progress: @Sendable (LinesProgress) -> Void = { Output.progress("dumped \($0.lines) records") }
            let count: Int
            if let output {
                guard type.isEmpty else { throw Failure("--type with --output: dump to standard output to pick types, or export from your app") }
                count = try await database.export(to: URL(fileURLWithPath: output), decrypting: decrypt, progress: progress)
            } else {
                count = try await database.export(
                    to: FileHandle.standardOutput, classNames: type.isEmpty ? nil : type, decrypting: decrypt, progress: progress)
            }
            Output.endProgress()
            if output != nil || Output.showsProgress { Output.error("dumped \(count) records") }
        }
    }
}

struct Load: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Stores the records of a JSON Lines file (as dump writes them), or of standard input.",
        discussion: """
            Every --batch-size records are one transaction. A line that is not a record stops the load, naming it and the
            last line stored; rerun with --from-line to go on.
            Examples: localdb load ./copy records.jsonl
                      localdb dump ./data | localdb load ./copy
            """)

    @OptionGroup var target: DatabaseArgument
    @Argument(help: "The JSON Lines file (standard input when left out).", completion: .file()) var file: String?
    @Option(help: "Records a transaction.") var batchSize = 10_000
    @Option(help: "The first line to load (1-based).") var fromLine = 1

    func run() async throws {
        try await reporting {
            // The input first: a missing file leaves no new database behind.
            if let file, !FileManager.default.isReadableFile(atPath: file) { throw Failure("cannot read '\(file)'") }
            let database = try target.openForWriting()
            let source = URL(fileURLWithPath: file ?? "/dev/stdin")
            let count = try await database.importLines(from: source, batchSize: batchSize, startingAtLine: fromLine) { progress in
                Output.progress("loaded \(progress.linesCommitted) lines")
            }
            Output.endProgress()
            Output.error("loaded \(count) records")
        }
    }
}

struct ImportSQLite: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import-sqlite",
        abstract: "Imports a SwiftLocal (or SwiftSerialization) SQLite database: its table record(id, objectName, data).",
        discussion: """
            Every record keeps its id, its stored class name and its JSON document byte for byte (numbers keep all their
            digits). A record whose data is not a JSON object is reported on standard error (and in --json), not stored,
            and the exit status is then 3.
            Example: localdb import-sqlite ./data ~/Library/swiftlocal.sqlite
            """)

    @OptionGroup var target: DatabaseArgument
    @Argument(help: "The SQLite file.", completion: .file()) var file: String
    @Option(help: "Records a transaction.") var batchSize = 10_000
    @Flag(help: "Print a JSON summary.") var json = false

    struct Summary: Encodable {
        let imported: Int
        let invalid: [Invalid]
        struct Invalid: Encodable {
            let id: String
            let reason: String
        }
    }

    /// The invalid rows met, from the import's thread.
    final class Invalids: @unchecked Sendable {
        private let lock = NSLock()
        private var list: [Summary.Invalid] = []
        func add(_ id: String, _ reason: String) { lock.withLock { list.append(.init(id: id, reason: reason)) } }
        var all: [Summary.Invalid] { lock.withLock { list } }
    }

    func run() async throws {
        try await reporting {
            let records = try SwiftLocalRecords(path: file)
            let database = try target.openForWriting()
            let invalids = Invalids()
            let imported = try await database.importDocuments(batchSize: batchSize, next: {
                while let row = try records.next() {
                    switch row {
                    case let .record(id, className, json): return (id, className, json)
                    case let .invalid(id, reason): invalids.add(id, reason)
                    }
                }
                return nil
            }, invalid: { id, reason in invalids.add(id, reason) }, progress: { progress in
                Output.progress("imported \(progress.linesCommitted) rows")
            })
            Output.endProgress()
            let invalid = invalids.all
            if json {
                try Output.json(Summary(imported: imported, invalid: invalid))
            } else {
                for row in invalid { Output.error("record '\(row.id)' not imported: \(row.reason)") }
                Output.error("imported \(imported) records" + (invalid.isEmpty ? "" : ", \(invalid.count) not imported"))
            }
            if !invalid.isEmpty { throw Status.problems }
        }
    }
}

struct Backup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copies a database while others read and write it, consistent as of one commit.",
        discussion: """
            The copy is written under a hidden name, synced, then renamed: a failed or killed backup leaves nothing under
            the destination's name. --compact leaves free pages out.
            Example: localdb backup ./data ./nightly --compact
            """)

    @OptionGroup var target: DatabaseArgument
    @Argument(help: "The new directory.", completion: .directory) var destination: String
    @Flag(help: "Leave free pages out (LMDB's compacting copy).") var compact = false

    func run() async throws {
        try await reporting {
            let database = try target.openReadOnly()
            try await database.backup(to: URL(fileURLWithPath: destination), compact: compact) { progress in
                Output.progress("copied \(Output.bytes(progress.bytesCopied)) of about \(Output.bytes(progress.bytesExpected))")
            }
            Output.endProgress()
            Output.error("backed up to \(destination)")
        }
    }
}

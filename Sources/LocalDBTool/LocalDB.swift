import ArgumentParser
import Foundation
import LocalLMDB
import LocalLMDBEncryption

/// `localdb`: look inside, back up, export, import and check LocalLMDB databases.
///
/// Every verb takes the database directory first. Reading verbs open it read-only (an app using
/// it is never blocked or changed) and take `--json` for scripts. Exit status: 0 done, 1 failed
/// (one line on standard error says why), 64 bad usage (`EX_USAGE`), 3 done with problems (`verify` found
/// some; `import-sqlite` skipped invalid records), 4 not found (`get`).
public struct LocalDB: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "localdb",
        abstract: "Look inside, back up, export, import and check LocalLMDB databases.",
        discussion: """
            Examples:
              localdb stats ./data
              localdb get ./data ada --raw
              localdb dump ./data --output records.jsonl
              localdb load ./copy records.jsonl
              localdb backup ./data ./nightly --compact
              localdb import-sqlite ./data ~/Library/swiftlocal.sqlite
              localdb query ./data Person --where 'age>=30' --order age --limit 10
              localdb verify ./data && echo consistent
            """,
        subcommands: [
            Stats.self, Types.self, Get.self, List.self, Dump.self, Load.self, ImportSQLite.self, Verify.self, Backup.self, Watch.self, Readers.self, QueryRecords.self, Migrations.self,
        ])

    public init() {}

    /// Runs the command line of the process (the `localdb` executable's entry point).
    public static func runFromCommandLine() async {
        await main(nil)
    }
}

/// Exit statuses with a meaning.
enum Status {
    static let problems = ExitCode(3)
    static let notFound = ExitCode(4)
}

/// The database directory every verb takes first, and the keys of an encrypted one.
struct DatabaseArgument: ParsableArguments {
    @Argument(help: "The database directory.", completion: .directory)
    var database: String

    @Option(
        help: ArgumentHelp(
            "A file of the database's encryption keys: one 'ID=HEX' line a key (256 bits, 64 hex digits), the current key first.",
            discussion: "Keep the file readable by you alone. The keys are never stored in the database."),
        completion: .file())
    var keyFile: String?

    var url: URL { URL(fileURLWithPath: database) }

    /// The database, read-only: refused when the directory holds none.
    func openReadOnly() throws -> LocalDatabase {
        guard FileManager.default.fileExists(atPath: url.appendingPathComponent("data.mdb").path) else {
            throw Failure("no database at '\(database)' (no data.mdb)")
        }
        var configuration = try configuration()
        configuration.readOnly = true
        return try LocalDatabase(directory: url, configuration: configuration)
    }

    /// The database, for writing (created when the directory has none).
    func openForWriting() throws -> LocalDatabase {
        try LocalDatabase(directory: url, configuration: configuration())
    }

    /// The configuration: with the keys of `--key-file`, when given.
    private func configuration() throws -> DatabaseConfiguration {
        var configuration = DatabaseConfiguration()
        guard let keyFile else { return configuration }
        let keys = try Self.keys(in: keyFile)
        guard let current = keys.first else { throw Failure("the key file '\(keyFile)' holds no key") }
        configuration.encryption = DatabaseEncryption(try AESGCMCipher(current: current, previous: Array(keys.dropFirst())))
        return configuration
    }

    /// The keys of a key file: `ID=HEX` lines (blank lines and `#` comments skipped).
    static func keys(in path: String) throws -> [EncryptionKey] {
        guard let text = FileManager.default.contents(atPath: path).map({ String(decoding: $0, as: UTF8.self) }) else {
            throw Failure("cannot read the key file '\(path)'")
        }
        var keys: [EncryptionKey] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = line.trimmingCharacters(in: .whitespaces)
            guard !line.isEmpty, !line.hasPrefix("#") else { continue }
            guard let separator = line.lastIndex(of: "="), let bytes = hexBytes(line[line.index(after: separator)...]) else {
                throw Failure("line \(number + 1) of the key file is not ID=HEX")
            }
            keys.append(try EncryptionKey(id: String(line[..<separator]), bytes: bytes))
        }
        return keys
    }

    /// The bytes `hex` spells (two digits a byte); nil when it spells none.
    static func hexBytes(_ hex: Substring) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count.isMultiple(of: 2) else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        return bytes
    }
}

/// A failure told as one line.
struct Failure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Output: to standard output, as lines or JSON; progress to standard error when it is a terminal.
enum Output {
    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func error(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// `value` as pretty JSON, keys sorted.
    static func json<T: Encodable>(_ value: T) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        FileHandle.standardOutput.write(try encoder.encode(value))
        line("")
    }

    /// Whether standard error is a terminal: progress is drawn there, else left out.
    static let showsProgress = isatty(2) == 1

    /// Draws `text` over the last progress line.
    static func progress(_ text: String) {
        guard showsProgress else { return }
        FileHandle.standardError.write(Data(("\r\u{1B}[2K" + text).utf8))
    }

    /// Ends the progress line.
    static func endProgress() {
        guard showsProgress else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8))
    }

    static func bytes(_ count: Int) -> String {
        ByteCountFormatter.string(fromByteCount: Int64(count), countStyle: .binary)
    }
}

/// Runs a verb's body, turning any error into one line on standard error and exit status 1.
func reporting(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let exit as ExitCode {
        throw exit
    } catch let error as LocalDatabaseError {
        if case let .encryptionRequired(path) = error {
            Output.error("localdb: the database at \(path) is encrypted: give its keys with --key-file")
        } else {
            Output.error("localdb: \(error.description)")
        }
        throw ExitCode.failure
    } catch let error as EncryptionKeyError {
        Output.error("localdb: the key file: \(error)")
        throw ExitCode.failure
    } catch {
        Output.error("localdb: \(error)")
        throw ExitCode.failure
    }
}

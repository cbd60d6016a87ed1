import ArgumentParser
import Foundation
import LocalLMDB

struct Stats: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Records, records per type, file and map size, page use, readers and the change log position.",
        discussion: "Example: localdb stats ./data --json")

    @OptionGroup var target: DatabaseArgument
    @Flag(help: "Print JSON.") var json = false

    func run() async throws {
        try await reporting {
            let database = try target.openReadOnly()
            let stats = try await database.statistics()
            if json { return try Output.json(stats) }
            Output.line("records      \(stats.records)")
            Output.line("types        \(stats.types.count)")
            for type in stats.types { Output.line("  \(type.className)  \(type.records)") }
            Output.line("file         \(Output.bytes(stats.fileBytes))")
            Output.line("map          \(Output.bytes(stats.mapBytes)) (\(Output.bytes(stats.usedBytes)) in use, pages of \(stats.pageSize) bytes)")
            Output.line("readers      \(stats.readers) of \(stats.maxReaders)")
            Output.line("last commit  \(stats.lastCommit)")
            if let token = stats.changeToken { Output.line("change token \(token)") }
        }
    }
}

struct Migrations: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The migrations the database has had, in the order they completed, and the one under way.",
        discussion: "Example: localdb migrations ./data")

    @OptionGroup var target: DatabaseArgument
    @Flag(help: "Print JSON.") var json = false

    func run() async throws {
        try await reporting {
            let status = try await target.openReadOnly().migrationStatus()
            if json { return try Output.json(MigrationsOutput(completed: status.completed, underWay: status.underWay)) }
            for name in status.completed { Output.line(name) }
            if let running = status.underWay { Output.line("under way: \(running)") }
        }
    }
}

/// `localdb migrations --json`.
struct MigrationsOutput: Encodable {
    let completed: [String]
    let underWay: String?
}

struct Types: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The stored class names, with their record counts.", discussion: "Example: localdb types ./data")

    @OptionGroup var target: DatabaseArgument
    @Flag(help: "Print JSON.") var json = false

    func run() async throws {
        try await reporting {
            let types = try await target.openReadOnly().statistics().types
            if json { return try Output.json(types) }
            for type in types { Output.line("\(type.className)\t\(type.records)") }
        }
    }
}

struct Get: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A record's stored JSON, indented (or raw, as stored). Exit status 4 when there is none.",
        discussion: "Example: localdb get ./data ada")

    @OptionGroup var target: DatabaseArgument
    @Argument(help: "The record's id.") var id: String
    @Flag(help: "Print the stored bytes as they are.") var raw = false
    @Flag(help: "Print {\"id\", \"class\", \"value\"} as one line of JSON (as dump does).") var json = false

    func run() async throws {
        try await reporting {
            guard let document = try await target.openReadOnly().storedDocument(id: id) else {
                Output.error("localdb: no record '\(id)'")
                throw Status.notFound
            }
            if raw { return Output.line(document.json) }
            if json {
                return Output.line(
                    "{\"id\":\(PrettyJSON.string(document.id)),\"class\":\(PrettyJSON.string(document.className)),\"value\":\(document.json)}")
            }
            Output.line("\(document.className) \(document.id)")
            Output.line(PrettyJSON.indent(document.json))
        }
    }
}

struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ls", abstract: "The ids stored under a class name, in key order.",
        discussion: "Example: localdb ls ./data Person --limit 20 --after ada")

    @OptionGroup var target: DatabaseArgument
    @Argument(help: "The stored class name.") var type: String
    @Option(help: "At most this many ids.") var limit: Int?
    @Option(help: "Start after this id.") var after: String?
    @Flag(help: "Print JSON.") var json = false

    func run() async throws {
        try await reporting {
            let ids = try await target.openReadOnly().readIDs(ofClassNamed: type, after: after, limit: limit)
            if json { return try Output.json(ids) }
            for id in ids { Output.line(id) }
        }
    }
}

struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Checks every record and index entry. Exit status 3 when something is wrong.",
        discussion: "Example: localdb verify ./data || echo damaged")

    @OptionGroup var target: DatabaseArgument
    @Flag(help: "Print JSON.") var json = false

    struct Report: Encodable {
        let consistent: Bool
        let records: Int
        let indexEntries: Int
        let problems: [String]
    }

    func run() async throws {
        try await reporting {
            let report = try await target.openReadOnly().verifyIntegrity()
            if json {
                try Output.json(Report(
                    consistent: report.isConsistent, records: report.recordCount, indexEntries: report.indexEntryCount,
                    problems: report.problems.map(\.description)))
            } else {
                Output.line(report.description)
            }
            if !report.isConsistent { throw Status.problems }
        }
    }
}

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Prints each commit as it happens (other processes' included), one JSON line per change.",
        discussion: "Example: localdb watch ./data --type Person")

    @OptionGroup var target: DatabaseArgument
    @Option(help: "Only changes of this stored class name.") var type: String?

    func run() async throws {
        try await reporting {
            let database = try target.openReadOnly()
            for try await commit in database.changes(ofClassNames: type.map { [$0] }) {
                for change in commit.changes {
                    let line: [String: String]
                    switch change {
                    case let .written(id, className): line = ["change": "written", "id": id, "class": className]
                    case let .deleted(id, className): line = ["change": "deleted", "id": id, "class": className]
                    case let .typeDeleted(className): line = ["change": "typeDeleted", "class": className]
                    case .cleared: line = ["change": "cleared"]
                    }
                    let data = try JSONSerialization.data(withJSONObject: line, options: [.sortedKeys, .withoutEscapingSlashes])
                    Output.line(String(decoding: data, as: UTF8.self))
                }
            }
        }
    }
}

struct Readers: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The reader slots in use (process, thread, commit read); --clear-stale frees those of dead processes.",
        discussion: "Example: localdb readers ./data --clear-stale")

    @OptionGroup var target: DatabaseArgument
    @Flag(help: "Free the slots of processes that are gone.") var clearStale = false
    @Flag(help: "Print JSON.") var json = false

    struct Report: Encodable {
        let readers: [ReaderSlot]
        let cleared: Int
    }

    func run() async throws {
        try await reporting {
            let database = try target.openReadOnly()
            // This process's own slot (the open's) is left out.
            let own = getpid()
            let (slots, cleared) = try database.readerSlots(clearingStale: clearStale)
            let others = slots.filter { $0.process != own }
            if json { return try Output.json(Report(readers: others, cleared: cleared)) }
            for slot in others {
                Output.line("process \(slot.process)  thread \(String(slot.thread, radix: 16))  " + (slot.transaction.map { "reading commit \($0)" } ?? "idle"))
            }
            if others.isEmpty { Output.line("no other readers") }
            if clearStale { Output.line("freed \(cleared) stale slots") }
        }
    }
}

struct QueryRecords: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "The records of a class name whose fields meet conditions, as JSON Lines (as dump writes them).",
        discussion: """
            Conditions: FIELD=VALUE, FIELD>VALUE, FIELD>=VALUE, FIELD<VALUE, FIELD<=VALUE, FIELD^=PREFIX (a dotted path for
            nested fields; VALUE as JSON when it reads as JSON, 36, 1.5, true, null, "36", else as a string).
            The indexes stored for the class serve the query when one can; otherwise every record of it is read.
            Quote a condition with < or > in it: the shell would take them for redirections.
            Examples: localdb query ./data Person --where 'age>=30' --order age --limit 10
                      localdb query ./data Person --where address.city=Paris --ids
            """)

    @OptionGroup var target: DatabaseArgument
    @Argument(help: "The stored class name.") var type: String
    @Option(name: .customLong("where"), help: "A condition (repeatable).") var conditions: [String] = []
    @Option(help: "The field to order by.") var order: String?
    @Flag(help: "Order from the largest.") var descending = false
    @Option(help: "At most this many records.") var limit: Int?
    @Flag(help: "Print the ids alone.") var ids = false

    /// A value given on the command line.
    enum Value: Encodable {
        case string(String), integer(Int), decimal(Decimal), flag(Bool), null

        /// `text` as the JSON scalar it spells (a number by the JSON grammar, `true`, `false`,
        /// `null`, a quoted string); any other text is a string as it is.
        init(_ text: String) {
            if text == "true" || text == "false" {
                self = .flag(text == "true")
            } else if text == "null" {
                self = .null
            } else if Self.isJSONNumber(text) {
                if let integer = Int(text) {
                    self = .integer(integer)
                } else if let number = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) {
                    self = .decimal(number)
                } else {
                    self = .string(text)
                }
            } else if text.count >= 2, text.first == "\"", text.last == "\"",
                      let decoded = try? JSONDecoder().decode(String.self, from: Data(text.utf8)) {
                self = .string(decoded)
            } else {
                self = .string(text)
            }
        }

        /// Whether `text` is a number as JSON writes one: `-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`.
        static func isJSONNumber(_ text: String) -> Bool {
            var bytes = Array(text.utf8)[...]
            func digits() -> Int {
                let count = bytes.prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }.count
                bytes = bytes.dropFirst(count)
                return count
            }
            if bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
            if bytes.first == UInt8(ascii: "0") {
                bytes = bytes.dropFirst()
            } else if digits() == 0 {
                return false
            }
            if bytes.first == UInt8(ascii: ".") {
                bytes = bytes.dropFirst()
                guard digits() > 0 else { return false }
            }
            if bytes.first == UInt8(ascii: "e") || bytes.first == UInt8(ascii: "E") {
                bytes = bytes.dropFirst()
                if bytes.first == UInt8(ascii: "+") || bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
                guard digits() > 0 else { return false }
            }
            return bytes.isEmpty
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case let .string(text): try container.encode(text)
            case let .integer(integer): try container.encode(integer)
            case let .decimal(number): try container.encode(number)
            case let .flag(flag): try container.encode(flag)
            case .null: try container.encodeNil()
            }
        }
    }

    /// `text` as a field and a condition: split at the first operator from the left (the
    /// longest one there), so a value may hold `=`, `<` or `>`.
    static func condition(_ text: String) throws -> (field: String, condition: QueryCondition) {
        let operators: [(symbol: String, make: (String) -> QueryCondition)] = [
            (">=", { .atLeast(Value($0)) }), ("<=", { .atMost(Value($0)) }), ("^=", { .hasPrefix($0) }),
            (">", { .greaterThan(Value($0)) }), ("<", { .lessThan(Value($0)) }), ("=", { $0 == "null" ? .isNil : .equals(Value($0)) }),
        ]
        var index = text.startIndex
        while index < text.endIndex {
            // Longest first: `>=` before `>`.
            for (symbol, make) in operators where text[index...].hasPrefix(symbol) {
                guard index != text.startIndex else { throw ValidationError("'\(text)' is not a condition: it names no field") }
                return (String(text[..<index]), make(String(text[text.index(index, offsetBy: symbol.count)...])))
            }
            index = text.index(after: index)
        }
        throw ValidationError("'\(text)' is not a condition: write FIELD=VALUE, FIELD>=VALUE, FIELD^=PREFIX…")
    }

    func validate() throws {
        for condition in conditions { _ = try Self.condition(condition) }
    }

    func run() async throws {
        let parsed = try conditions.map(Self.condition)
        try await reporting {
            let documents = try await target.openReadOnly().readDocuments(
                ofClassNamed: type, where: parsed, orderedBy: order.map { ($0, descending) }, limit: limit)
            for document in documents {
                if ids { Output.line(document.id); continue }
                Output.line("{\"id\":\(PrettyJSON.string(document.id)),\"class\":\(PrettyJSON.string(document.className)),\"value\":\(document.json)}")
            }
        }
    }
}

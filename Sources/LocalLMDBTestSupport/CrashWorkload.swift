import LocalLMDB

/// The crash harness's workload: a deterministic sequence of operations, so that the child
/// process that runs it and the test that kills it agree on what each acknowledged step did.
public enum CrashOperation: Sendable, Equatable {
    case put(id: String, isNote: Bool, text: String)
    /// Several puts and deletes committed together.
    case transaction([CrashOperation])
    case delete(id: String)
    case deleteAllNotes
    case clear
}

/// What the database should hold: id → (is it a Note, its text).
public struct CrashState: Equatable, Sendable, CustomStringConvertible {
    public var records: [String: Stored] = [:]

    public struct Stored: Equatable, Sendable {
        public var isNote: Bool
        public var text: String

        public init(isNote: Bool, text: String) {
            self.isNote = isNote
            self.text = text
        }
    }

    public init() {}

    public var description: String { "\(records.count) records" }

    public mutating func apply(_ operation: CrashOperation) {
        switch operation {
        case let .put(id, isNote, text): records[id] = Stored(isNote: isNote, text: text)
        case let .transaction(operations): operations.forEach { apply($0) }
        case let .delete(id): records[id] = nil
        case .deleteAllNotes: records = records.filter { !$0.value.isNote }
        case .clear: records = [:]
        }
    }
}

public enum CrashWorkload {
    /// Operation `number` (from 1) of the sequence for `seed`.
    public static func operation(_ number: Int, seed: UInt64) -> CrashOperation {
        var random = SplitMix(seed: seed &+ UInt64(number) &* 0x9E37_79B9_7F4A_7C15)
        let choice = random.next() % 100
        switch choice {
        case 0..<55: return put(number, 0, &random)
        case 55..<80:
            let count = 2 + Int(random.next() % 5)
            return .transaction((0..<count).map { part in
                random.next() % 4 == 0 ? .delete(id: id(&random)) : put(number, part, &random)
            })
        case 80..<94: return .delete(id: id(&random))
        case 94..<98: return .deleteAllNotes
        default: return .clear
        }
    }

    private static func id(_ random: inout SplitMix) -> String {
        "k\(random.next() % 60)"
    }

    private static func put(_ number: Int, _ part: Int, _ random: inout SplitMix) -> CrashOperation {
        .put(id: id(&random), isNote: random.next() % 3 == 0, text: "op\(number).\(part)-" + String(repeating: "v", count: Int(random.next() % 400)))
    }

    /// Runs one operation against `database`.
    public static func perform(_ operation: CrashOperation, on database: LocalDatabase) async throws {
        switch operation {
        case let .put(id, isNote, text):
            if isNote {
                try await database.write(Record(id: id, data: Note(text: text)))
            } else {
                try await database.write(Record(id: id, data: Entry(sequence: 0, payload: text)))
            }
        case let .transaction(operations):
            try await database.startTransaction()
            for operation in operations { try await perform(operation, on: database) }
            try await database.commitTransaction()
        case let .delete(id):
            try await database.delete(id: id)
        case .deleteAllNotes:
            try await database.delete(Note.self)
        case .clear:
            try await database.clearDatabase()
        }
    }

    /// What `database` holds, in the harness's terms.
    public static func state(of database: LocalDatabase) async throws -> CrashState {
        var state = CrashState()
        for id in try await database.readIDs(Note.self) {
            let note: Note? = try await database.read(id: id)
            state.records[id] = .init(isNote: true, text: note?.text ?? "<missing>")
        }
        for id in try await database.readIDs(Entry.self) {
            let entry: Entry? = try await database.read(id: id)
            state.records[id] = .init(isNote: false, text: entry?.payload ?? "<missing>")
        }
        return state
    }
}

/// A small, fast, seedable generator (SplitMix64), so randomized tests can be replayed.
public struct SplitMix: RandomNumberGenerator, Sendable {
    public private(set) var state: UInt64

    public init(seed: UInt64) {
        state = seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

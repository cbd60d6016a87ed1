import LocalLMDBJSON
import LocalLMDBLMDB

/// A row of the `classes` database: the Swift type that owns a stored class name.
///
/// Invariant (kept by `RecordStore.claim`): a stored class name has one owner at a time. A
/// write that would store a record or nested object under a name owned by another Swift type
/// fails with `classNameConflict`, unless the writing type was registered explicitly
/// (`StoredClasses.register`), which adopts the name (a class that moved to another module).
///
/// Stored as `name \0 mangledName \0 qualifiedName`; rows written before the qualified name was
/// kept end after the mangled name.
@usableFromInline package struct StoredClass: Sendable, Hashable {
    /// The class name records are stored under (SwiftLocal's short class name, or a registered one).
    @usableFromInline package let name: String
    /// The owning type's mangled Swift name, which the Swift runtime resolves in any process
    /// that links the type's module.
    @usableFromInline package let mangledName: String
    /// The owning type's module-qualified name, for messages; empty in older rows.
    @usableFromInline package let qualifiedName: String
    /// The owning type was registered explicitly, so it takes the name over from another type.
    /// Not stored.
    @usableFromInline package let adopts: Bool
    /// The row is copied from another database by a replicator, which mirrors what that
    /// database holds: the spelling rule (`checkSpelling(againstStored:)`) was that database's
    /// to keep. Not stored.
    @usableFromInline package let copied: Bool

    package init(name: String, mangledName: String, qualifiedName: String, adopts: Bool = false, copied: Bool = false) {
        self.name = name
        self.mangledName = mangledName
        self.qualifiedName = qualifiedName
        self.adopts = adopts
        self.copied = copied
    }

    /// Parses a stored row; nil when it is not one.
    package init?(parsing bytes: UnsafeRawBufferPointer) {
        let parts = bytes.split(separator: 0, maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2 else { return nil }
        name = String(decoding: parts[0], as: UTF8.self)
        mangledName = String(decoding: parts[1], as: UTF8.self)
        qualifiedName = parts.count > 2 ? String(decoding: parts[2], as: UTF8.self) : ""
        adopts = false
        copied = false
    }

    /// The stored row.
    package var encoded: [UInt8] {
        Array(name.utf8) + [0] + Array(mangledName.utf8) + [0] + Array(qualifiedName.utf8)
    }

    /// The owner's name for messages: qualified when known.
    package var displayName: String {
        qualifiedName.isEmpty ? "the type with mangled name \(mangledName)" : qualifiedName
    }

    /// The claim rule, for every engine: whether a write by this row's type may store records
    /// under its name, given the name's stored row `existing`, and whether the row must be
    /// written (the name is new, changes owner by adoption, or lacks its qualified name).
    /// - Throws: `classNameConflict` when another type owns the name and this one does not adopt it.
    package func claim(over existing: StoredClass?) throws(DatabaseError) -> Bool {
        guard let existing else { return true }
        if existing.hasSameOwner(as: self) && !existing.qualifiedName.isEmpty { return false }
        guard existing.hasSameOwner(as: self) || adopts else {
            throw .classNameConflict(name: name, storedBy: existing.displayName, requestedBy: qualifiedName)
        }
        return true
    }

    /// The spelling rule, for every engine: a class name new to a database may not be another
    /// stored name in another Unicode normalization (`"Caf\u{E9}"` and `"Cafe\u{301}"`). Both
    /// engines key names by their bytes, so they would be two classes, but Swift's `String`
    /// calls them equal, so the app's types, `Legacy`'s renames and the readers' caches could
    /// not tell their records apart. Called when a name is about to be recorded, with every
    /// stored name.
    /// - Throws: `classRegistration` naming both spellings' bytes.
    package func checkSpelling(againstStored storedNames: some Sequence<String>) throws(DatabaseError) {
        for stored in storedNames where stored == name && !stored.hasSameUTF8(as: name) {
            func bytes(_ text: String) -> String { text.utf8.map { String($0, radix: 16) }.joined(separator: " ") }
            throw .classRegistration(
                type: qualifiedName.isEmpty ? name : qualifiedName,
                reason: "its class name '\(name)' (UTF-8 \(bytes(name))) is the stored class name '\(stored)' (UTF-8 \(bytes(stored))) "
                    + "in another Unicode normalization; register the type under a name spelt as the stored one, or under another name")
        }
    }

    /// The owner rule, for every engine: records under this row's name are its type's to read or
    /// delete unless `existing` (the name's stored row) belongs to another type that this one
    /// does not adopt.
    /// - Throws: `classNameConflict` in that case.
    package func checkOwner(existing: StoredClass?) throws(DatabaseError) {
        guard !adopts, let existing, !existing.hasSameOwner(as: self) else { return }
        throw .classNameConflict(name: name, storedBy: existing.displayName, requestedBy: qualifiedName)
    }

    /// True when `other` is owned by the same Swift type.
    package func hasSameOwner(as other: StoredClass) -> Bool {
        mangledName == other.mangledName
    }
}

/// Reads rows of the `classes` database: in a given transaction, or in a fresh snapshot.
///
/// Holds its environment unowned: it is used only while a read holds the environment alive
/// (a `ClassLookup` lives for one read), so copying it costs no reference counting.
@usableFromInline package struct ClassTable: Sendable {
    @usableFromInline unowned(unsafe) let environment: Environment
    @usableFromInline let database: DatabaseHandle

    /// The row for `name`, read in `transaction`, or in a new read-only snapshot when nil.
    package func row(named name: String, in transaction: Transaction?) throws(DatabaseError) -> StoredClass? {
        guard let transaction else {
            return try environment.withReadTransaction { transaction throws(DatabaseError) in
                try row(named: name, in: transaction)
            }
        }
        return try StorageKey(name, maxKeySize: environment.maxKeySize).withBytes { key throws(DatabaseError) in
            try transaction.get(database, key).flatMap(StoredClass.init(parsing:))
        }
    }

    /// Who owns a stored class name, as seen by one type.
    package enum Ownership {
        /// Nobody: no record or nested object has been stored under the name.
        case none
        /// The type asking.
        case same
        /// Another type.
        case other(StoredClass)
    }

    /// Who owns `storedClass.name`, compared with `storedClass`'s type. Compares bytes, building
    /// no strings unless the owner differs.
    package func ownership(of storedClass: StoredClass, in transaction: Transaction) throws(DatabaseError) -> Ownership {
        try StorageKey(storedClass.name, maxKeySize: environment.maxKeySize).withBytes { key throws(DatabaseError) in
            guard let row = try transaction.get(database, key) else { return .none }
            if let separator = row.firstIndex(of: 0) {
                let owner = row[(separator + 1)...].prefix { $0 != 0 }
                var mangled = storedClass.mangledName
                if mangled.withUTF8({ owner.elementsEqual($0) }) { return .same }
            }
            return StoredClass(parsing: row).map(Ownership.other) ?? .none
        }
    }
}

extension ClassTable {
    /// Every stored class name, read in `transaction`.
    package func names(in transaction: Transaction) throws(DatabaseError) -> [String] {
        try transaction.withCursor(database) { cursor throws(DatabaseError) in
            var names: [String] = []
            var entry = try cursor.get(.first)
            while let (_, row) = entry {
                if let storedClass = StoredClass(parsing: row) { names.append(storedClass.name) }
                entry = try cursor.get(.next)
            }
            return names
        }
    }
}

/// The classes of a write, each once, in the order first met. Past a few, a set answers whether
/// one is there already, so collecting the classes of many records costs time in proportion to
/// their number, however many classes they have (a write of one record, the common case, makes
/// no set).
package struct ClassList: Sendable {
    package private(set) var classes: [StoredClass] = []
    /// The classes, once there are more than `linearLimit`.
    private var members: Set<StoredClass>?
    static let linearLimit = 8

    package init() {}

    /// Adds each of `more` not already here, in order.
    @inlinable package mutating func add(_ more: some Sequence<StoredClass>) {
        for storedClass in more { add(storedClass) }
    }

    @usableFromInline mutating func add(_ storedClass: StoredClass) {
        if members == nil {
            guard !classes.contains(storedClass) else { return }
            classes.append(storedClass)
            if classes.count > Self.linearLimit { members = Set(classes) }
        } else if members?.insert(storedClass).inserted == true {
            classes.append(storedClass)
        }
        assert(members.map { $0.count == classes.count } ?? true, "the set and the list hold the same classes")
    }
}

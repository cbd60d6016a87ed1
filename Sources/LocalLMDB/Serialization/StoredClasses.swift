import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// Explicit registration of model classes: the class name a type is stored under, and which
/// type a stored name belongs to.
///
/// Most apps never need it. Every `Storable` type is stored under its short Swift name (as in
/// SwiftLocal), and each database records which Swift type owns each name, so a process can
/// restore subclasses and nested objects it has never touched. Register a class when:
///
/// - **Two types share a short name** (`ModelsA.Person` and `ModelsB.Person`, or nested types
///   `OuterA.Item` and `OuterB.Item`). LocalLMDB never merges them: the second one to be
///   written, read, counted or deleted gets `LocalDatabaseError.classNameConflict`. Give one of
///   them a name of its own:
///   ```swift
///   try StoredClasses.register(ModelsB.Person.self, as: "ModelsB.Person")
///   ```
/// - **A class moved to another module.** Its records name it by its old module, which the new
///   build cannot find (`LocalDatabaseError.unresolvableClass`, or `classNameConflict` when the
///   moved class is written or read). Registering it adopts its old records:
///   ```swift
///   try StoredClasses.register(Person.self)
///   ```
///
/// Register at start-up, before the class is first written or read in the process (as with
/// `Legacy`): a class's stored name is fixed at its first use. Registering the same class the
/// same way again does nothing. Safe to call from any thread.
public enum StoredClasses {
    /// Registers `type` under `name`, or under its short Swift name when `name` is nil.
    ///
    /// Reads resolve `name` to `type` first, and `type`'s writes take the name over in databases
    /// where another type owned it (for a class that moved modules). To rename a class whose
    /// records already exist, use `Legacy.addClassRefactor(old:new:)` as well.
    /// - Throws: `LocalDatabaseError.classRegistration` when `type` was already used under
    ///   another name or without registration, when another type is registered under `name`, or
    ///   when `name` is empty or holds U+0000 (the class table's separator).
    public static func register(_ type: any Persistable.Type, as name: String? = nil) throws {
        try LocalDatabaseError.publishing { () throws(DatabaseError) in try TypeRegistry.shared.register(type, as: name) }
    }
}

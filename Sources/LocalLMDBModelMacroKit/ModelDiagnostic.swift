import SwiftDiagnostics
import SwiftSyntax

/// The macros' diagnostics: what cannot be stored, and why.
struct ModelDiagnostic: DiagnosticMessage {
    let message: String
    let id: String
    var severity: DiagnosticSeverity { .error }
    var diagnosticID: MessageID { MessageID(domain: "LocalLMDBModels", id: id) }

    static func notAStructOrFinalClass(_ macro: String) -> Self {
        Self(message: "@\(macro) applies to a struct or a final class", id: "kind")
    }
    static let nonFinalClass = Self(
        message: "a class model must be final: its stored form is its own fields, which a subclass could not extend", id: "final")
    static let subclass = Self(message: "a class model cannot inherit from another class (its fields would not be stored)", id: "superclass")
    static func unstorableType(_ name: String, _ type: String) -> Self {
        Self(message: "property '\(name)' of type '\(type)' cannot be stored (functions, tuples, metatypes and existentials have no stored form)", id: "type")
    }
    static func noType(_ name: String) -> Self {
        Self(message: "property '\(name)' needs a type annotation to be stored", id: "annotation")
    }
    static func lazy(_ name: String) -> Self {
        Self(message: "lazy property '\(name)' cannot be stored", id: "lazy")
    }
    static func notStoredNeedsDefault(_ name: String) -> Self {
        Self(message: "property '\(name)' is not stored, so it needs a default value", id: "default")
    }
    static func duplicateKey(_ key: String, _ first: String, _ second: String) -> Self {
        Self(message: "properties '\(first)' and '\(second)' are both stored under the key \"\(key)\"", id: "duplicate")
    }
    static func indexedNotStored(_ name: String) -> Self {
        Self(message: "property '\(name)' is not stored, so it cannot be indexed", id: "indexed")
    }
    static let indexesTwice = Self(
        message: "declare the indexes with @Indexed and #StoredIndex or with 'static var indexes', not both", id: "indexes")
    static let storedIndexOutsideModel = Self(
        message: "#StoredIndex declares an index of the @StoredModel type whose body holds it", id: "storedIndex")
    static func storedIndexNotStored(_ name: String) -> Self {
        Self(message: "'\(name)' is not a stored property of this model: an index cannot take it", id: "storedIndexNotStored")
    }
    static let ownCoding = Self(
        message: "a model with its own encode(to:) or init(from:) cannot use the macro: its generated coding would store other bytes", id: "coding")
    static let conditionalMembers = Self(
        message: "stored properties inside #if are not supported: the macro sees the declaration, not the build configuration", id: "if")
    static let pattern = Self(message: "a tuple pattern cannot be stored: declare each property on its own", id: "pattern")
    static func wrapper(_ name: String) -> Self {
        Self(message: "property wrapper '@\(name)' cannot be stored by the macro (its Codable form is the wrapper's)", id: "wrapper")
    }
    static func notStoredButCoded(_ name: String) -> Self {
        Self(message: "property '\(name)' is @NotStored but listed in CodingKeys, which Codable then stores", id: "coded")
    }
    static let multiEntryCounted = Self(message: "an index on an array (one entry per element) cannot be counted", id: "counted")
}

/// A fix-it's message.
struct ModelFixIt: FixItMessage {
    let message: String
    var fixItID: MessageID { MessageID(domain: "LocalLMDBModels", id: message) }
}

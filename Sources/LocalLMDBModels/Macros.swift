@_exported import LocalLMDB

/// Makes a struct or a final class a record type (`StoredModel`): it generates the model's
/// coding straight to and from the stored JSON (no `Encoder` or `Decoder`), in exactly the bytes
/// its synthesized `Codable` coding gives, its table of stored properties, and the indexes its
/// `@Indexed` properties declare. See <doc:Models> in LocalLMDB's documentation.
///
/// ```swift
/// @StoredModel
/// struct User {
///     @Indexed(unique: true) var email: String
///     @Indexed var age: Int
///     var nickname: String?
///     var address: Address
/// }
/// ```
@attached(member, names: named(init(_storedFields:)), named(indexes), named(CodingKeys))
@attached(extension, conformances: StoredModel, names: named(init(_storedFields:)), named(_writeFields(to:)), named(_storedProperties))
public macro StoredModel() = #externalMacro(module: "LocalLMDBModelMacros", type: "StoredModelMacro")

/// Makes a struct or a final class a value stored inside models (`StoredValue`), coded by
/// generated code as `@StoredModel` codes a model, with no class name of its own.
@attached(member, names: named(init(_storedFields:)), named(CodingKeys))
@attached(extension, conformances: StoredValue, names: named(init(_storedFields:)), named(_writeFields(to:)), named(_storedProperties))
public macro StoredValue() = #externalMacro(module: "LocalLMDBModelMacros", type: "StoredValueMacro")

/// Declares an index on the property, for a `@StoredModel` type: on an array, one entry per
/// element (`Index.each`); on dates, compared chronologically. `unique`: no two records may share
/// a value. `counted`: counts of ranges read a number per run of entries (see `Index.on`).
@attached(peer)
public macro Indexed(unique: Bool = false, counted: Bool = false) = #externalMacro(module: "LocalLMDBModelMacros", type: "MarkerMacro")

/// Declares an index on several properties of a `@StoredModel` type (a compound index), or on
/// nested ones, inside the type's body: `#StoredIndex<User>(\.address.city, \.age)`. The key
/// paths are checked by the compiler; the index is `Index.on(_:unique:counted:)` by key path,
/// added to those `@Indexed` declares: a first property that is an array is indexed element by
/// element, dates chronologically. Outside a `@StoredModel` type it is an error.
@freestanding(declaration)
public macro StoredIndex<Root>(_ keyPaths: PartialKeyPath<Root>..., unique: Bool = false, counted: Bool = false) =
    #externalMacro(module: "LocalLMDBModelMacros", type: "StoredIndexMacro")

/// Leaves the property out of a model's stored form (it must have a default value, which a
/// value read from the database gets).
@attached(peer)
public macro NotStored() = #externalMacro(module: "LocalLMDBModelMacros", type: "MarkerMacro")

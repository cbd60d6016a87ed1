// swift-tools-version:6.0
import CompilerPluginSupport
import PackageDescription

let package = Package(
    name: "LocalLMDB",
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .watchOS(.v10), .visionOS(.v1)],
    products: [
        .library(name: "LocalLMDB", targets: ["LocalLMDB"]),
        // Encryption at rest with swift-crypto: optional, so the core depends on LMDB alone.
        .library(name: "LocalLMDBEncryption", targets: ["LocalLMDBEncryption"]),
        .executable(name: "locallmdb-demo", targets: ["LocalLMDBDemo"]),
        // Two devices' to-do lists synchronized through PostgreSQL: `swift run locallmdb-sync-example`.
        .executable(name: "locallmdb-sync-example", targets: ["LocalLMDBSyncExample"]),
        // The same API on PostgreSQL, and replication between LocalLMDB and PostgreSQL: optional,
        // so the core depends on LMDB alone.
        .library(name: "LocalLMDBPostgres", targets: ["LocalLMDBPostgres"]),
    ],
    dependencies: [
        // Documentation only (`swift package generate-documentation`): a command plugin, used by no
        // target, so the library still depends on LMDB and the toolchain alone.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", exact: "1.5.0"),
        // AES-GCM for the optional `LocalLMDBEncryption` product only.
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        // The optional `LocalLMDBPostgres` product only.
        .package(url: "https://github.com/vapor/postgres-nio", exact: "1.33.2"),
    ],
    targets: [
        // LMDB itself, found through pkg-config (Debian: liblmdb-dev, Homebrew: lmdb).
        .systemLibrary(
            name: "CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"]), .brew(["lmdb"])]
        ),
        // The layers, each depending only on those below it (ARCHITECTURE.md; `scripts/check-layers`
        // refuses any other edge). Only `LocalLMDB` is a product: the layers below are reached
        // through `package` access, and the library depends on LMDB and the toolchain only.
        // The vocabulary every layer shares, and nothing else: the errors (`DatabaseError`), the
        // stack guard, thread-locals, byte comparisons. Its C part says what Swift cannot about the
        // calling thread's stack.
        .target(name: "CLocalLMDBBase"),
        .target(name: "LocalLMDBBase", dependencies: ["CLocalLMDBBase"]),
        // The LMDB wrapper: the only Swift code that calls LMDB.
        .target(name: "LocalLMDBLMDB", dependencies: ["CLMDB", "LocalLMDBBase"]),
        // The JSON codec: bytes in, bytes out (writer, scanner, validator, checksum). It stands
        // alone: on the shared vocabulary and the toolchain, not on LMDB.
        .target(name: "LocalLMDBJSON", dependencies: ["LocalLMDBBase"]),
        // The store: record layout, class table, change log (bytes and names, no models).
        .target(name: "LocalLMDBStore", dependencies: ["LocalLMDBJSON", "LocalLMDBLMDB"]),
        // The engine: writer thread, transactions, group commit, streams, notifier.
        .target(name: "LocalLMDBEngine", dependencies: ["LocalLMDBStore"]),
        // Models, `DataObject`, Codable, and the two faces: the public API.
        .target(name: "LocalLMDB", dependencies: ["LocalLMDBEngine"]),
        // Encryption at rest: a `RecordCipher` built on swift-crypto's AES-GCM.
        .target(name: "LocalLMDBEncryption", dependencies: ["LocalLMDB", .product(name: "Crypto", package: "swift-crypto")]),
        // The PostgreSQL engine: the seam's other side (`EngineWriter`), beside LMDB's engine.
        .target(
            name: "LocalLMDBPostgresEngine",
            dependencies: ["LocalLMDBEngine", .product(name: "PostgresNIO", package: "postgres-nio")]
        ),
        // `PostgresDatabase` (the faces on the PostgreSQL engine) and the replicators.
        .target(
            name: "LocalLMDBPostgres",
            dependencies: ["LocalLMDB", "LocalLMDBPostgresEngine", .product(name: "PostgresNIO", package: "postgres-nio")]
        ),
        // A short example program: `swift run locallmdb-demo`.
        .executableTarget(name: "LocalLMDBDemo", dependencies: ["LocalLMDB"]),
        // The synchronization example (the guide *Syncing devices*): two processes against a local PostgreSQL.
        .executableTarget(
            name: "LocalLMDBSyncExample",
            dependencies: ["LocalLMDB", "LocalLMDBPostgres", .product(name: "PostgresNIO", package: "postgres-nio")]
        ),
        // Model classes shared by the tests and the child processes they launch, so that
        // mangled type names are identical on both sides of a process boundary.
        .target(name: "LocalLMDBTestSupport", dependencies: ["LocalLMDB", "CLMDB"]),
        // The child process used by crash and multi-process tests.
        .executableTarget(
            name: "LocalLMDBTestHelper",
            dependencies: ["LocalLMDB", "LocalLMDBEncryption", "LocalLMDBTestSupport", "CLMDB"]
        ),
        // The child process of the replication tests (a replicator they kill).
        .executableTarget(
            name: "LocalLMDBPostgresHelper",
            dependencies: [
                "LocalLMDB", "LocalLMDBPostgres", "LocalLMDBPostgresEngine", "LocalLMDBTestSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        // The PostgreSQL engine and the replicators, against a real server (scripts/postgres).
        .testTarget(
            name: "LocalLMDBPostgresTests",
            dependencies: [
                "LocalLMDBPostgres", "LocalLMDBPostgresEngine", "LocalLMDB", "LocalLMDBTestSupport", "LocalLMDBPostgresHelper",
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        .testTarget(
            name: "LocalLMDBTests",
            dependencies: ["LocalLMDB", "LocalLMDBEncryption", "LocalLMDBTestSupport", "LocalLMDBTestHelper", "CLMDB", "CLocalLMDBBase"]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// The `localdb` tool: `localdb stats ./data`, `localdb backup ./data ./copy --compact`…
// `LOCALLMDB_TOOL=0` leaves it out (scripts/test's ThreadSanitizer run: its tests run the tool, one task
// to a process, and are left to the first run).
if Context.environment["LOCALLMDB_TOOL"] != "0" {
    package.products += [.executable(name: "localdb", targets: ["localdb"])]
    // The tool's command line only.
    package.dependencies += [.package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2")]
    package.targets += [
        // SQLite, for the tool's import of SwiftLocal's databases only (Debian: libsqlite3-dev).
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]),
        // The tool's commands, a library so that its tests reach its SQLite reader.
        .target(
            name: "LocalDBTool",
            dependencies: [
                "LocalLMDB", "LocalLMDBEncryption", "CSQLite", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(name: "localdb", dependencies: ["LocalDBTool"]),
        // The tool, tested end to end as a separate process (its real binary).
        .testTarget(
            name: "LocalDBToolTests",
            dependencies: ["LocalDBTool", "localdb", "LocalLMDB", "LocalLMDBEncryption", "LocalLMDBTestSupport"]
        ),
    ]
}

// The typed models (`@StoredModel`): macros, so swift-syntax, in a product of their own, so the core
// depends on LMDB and the toolchain alone. `LOCALLMDB_MACROS=0` leaves them out (scripts/test's
// ThreadSanitizer run: the macros generate synchronous coding, which the first run tests, and
// swift-syntax would be built once more under the sanitizer).
if Context.environment["LOCALLMDB_MACROS"] != "0" {
    // The model macros of the optional `LocalLMDBModels` product only.
    package.dependencies += [.package(url: "https://github.com/swiftlang/swift-syntax", exact: "603.0.1")]
    package.products += [.library(name: "LocalLMDBModels", targets: ["LocalLMDBModels"])]
    package.targets += [
        // The macros' code: reads a model's declaration, writes its coding. A library of its own so
        // that the expansion tests link it without depending on the macro target: a test target that
        // depends on a macro directly makes SwiftPM build the whole test product, and every library
        // under it, a second time for the host (CI's build took twice as long).
        .target(
            name: "LocalLMDBModelMacroKit",
            dependencies: [
                .product(name: "SwiftDiagnostics", package: "swift-syntax"),
                .product(name: "SwiftSyntax", package: "swift-syntax"),
                .product(name: "SwiftSyntaxBuilder", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
            ]
        ),
        // The compiler plugin: the kit's macros, served to the compiler.
        .macro(
            name: "LocalLMDBModelMacros",
            dependencies: [
                "LocalLMDBModelMacroKit",
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
            ]
        ),
        // The macros' declarations, with LocalLMDB re-exported.
        .target(name: "LocalLMDBModels", dependencies: ["LocalLMDB", "LocalLMDBModelMacros"]),
        // The random-predicate oracle, for the model tests and the PostgreSQL ones.
        .target(name: "LocalLMDBModelTestSupport", dependencies: ["LocalLMDBModels", "LocalLMDBTestSupport"]),
        .testTarget(
            name: "LocalLMDBModelTests",
            dependencies: [
                "LocalLMDBModels", "LocalLMDBModelMacroKit", "LocalLMDBTestSupport", "LocalLMDBModelTestSupport",
                .product(name: "SwiftSyntaxMacrosGenericTestSupport", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacroExpansion", package: "swift-syntax"),
            ]
        ),
    ]
    // The PostgreSQL tests run the predicate oracle on the server engine too.
    for target in package.targets where target.name == "LocalLMDBPostgresTests" {
        target.dependencies.append("LocalLMDBModelTestSupport")
        target.swiftSettings = (target.swiftSettings ?? []) + [.define("LOCALLMDB_MODELS")]
    }
}

// The fuzz targets (`scripts/fuzz`), only when asked for: `LOCALLMDB_FUZZ=1` adds one executable
// built with libFuzzer and AddressSanitizer in a build folder of its own, so that no other build
// of the package, the library's release build included, compiles or links it.
if Context.environment["LOCALLMDB_FUZZ"] == "1" {
    package.targets += [
        .target(name: "CLibFuzzer", path: "Fuzz/Sources/CLibFuzzer"),
        .executableTarget(
            name: "LocalLMDBFuzz",
            dependencies: ["LocalLMDB", "LocalLMDBStore", "LocalLMDBJSON", "LocalLMDBLMDB", "CLibFuzzer"],
            path: "Fuzz/Sources/LocalLMDBFuzz"
        ),
    ]
}

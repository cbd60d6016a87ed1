// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "LocalLMDB",
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .watchOS(.v10), .visionOS(.v1)],
    products: [
        .library(name: "LocalLMDB", targets: ["LocalLMDB"]),
        .executable(name: "locallmdb-demo", targets: ["LocalLMDBDemo"]),
    ],
    dependencies: [
        // Documentation only (`swift package generate-documentation`): a command plugin, used by no
        // target, so the library still depends on LMDB and the toolchain alone.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", exact: "1.5.0"),
    ],
    targets: [
        // LMDB itself, found through pkg-config (Debian: liblmdb-dev, Homebrew: lmdb).
        .systemLibrary(
            name: "CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"]), .brew(["lmdb"])]
        ),
        // The library: depends on LMDB and the toolchain only.
        .target(name: "LocalLMDB", dependencies: ["CLMDB"]),
        // A short example program: `swift run locallmdb-demo`.
        .executableTarget(name: "LocalLMDBDemo", dependencies: ["LocalLMDB"]),
        // Model classes shared by the tests and the child processes they launch, so that
        // mangled type names are identical on both sides of a process boundary.
        .target(name: "LocalLMDBTestSupport", dependencies: ["LocalLMDB"]),
        // The child process used by crash and multi-process tests.
        .executableTarget(
            name: "LocalLMDBTestHelper",
            dependencies: ["LocalLMDB", "LocalLMDBTestSupport", "CLMDB"]
        ),
        .testTarget(
            name: "LocalLMDBTests",
            dependencies: ["LocalLMDB", "LocalLMDBTestSupport", "LocalLMDBTestHelper", "CLMDB"]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// swift-tools-version:6.1
import PackageDescription

// The benchmark suite: a package of its own so that the library's tests never build GRDB or
// package-benchmark. `swift run -c release comparison` runs the side-by-side comparison;
// `swift package benchmark` runs the tracked benchmarks against their checked-in thresholds.
let package = Package(
    name: "LocalLMDBBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "LocalLMDB", path: ".."),
        .package(url: "https://github.com/ordo-one/package-benchmark", exact: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
        .package(url: "https://github.com/vapor/postgres-nio", exact: "1.33.2"),
    ],
    targets: [
        // LMDB for the raw-LMDB floor, which stores pre-encoded bytes with no LocalLMDB code between.
        .systemLibrary(name: "CLMDBRaw", pkgConfig: "lmdb", providers: [.apt(["liblmdb-dev"]), .brew(["lmdb"])]),
        // glibc's heap statistics (mallinfo2) and malloc_trim, for the memory report; stubs elsewhere.
        .target(name: "CMemoryProbe"),
        .target(
            name: "BenchmarkCore",
            dependencies: [
                .product(name: "LocalLMDB", package: "LocalLMDB"),
                .product(name: "LocalLMDBEncryption", package: "LocalLMDB"),
                .product(name: "LocalLMDBModels", package: "LocalLMDB"),
                .product(name: "GRDB", package: "GRDB.swift"),
                "CLMDBRaw",
                "CMemoryProbe",
            ]
        ),
        .executableTarget(name: "Comparison", dependencies: ["BenchmarkCore"]),
        // LocalLMDB's PostgreSQL store against hand-written postgres-nio, and the replicator
        // (scripts/postgres-benchmark).
        .executableTarget(
            name: "PostgresComparison",
            dependencies: [
                "BenchmarkCore",
                .product(name: "LocalLMDB", package: "LocalLMDB"),
                .product(name: "LocalLMDBPostgres", package: "LocalLMDB"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        .executableTarget(
            name: "LocalLMDBBenchmarks",
            dependencies: [
                "BenchmarkCore",
                .product(name: "LocalLMDB", package: "LocalLMDB"),
                .product(name: "LocalLMDBEncryption", package: "LocalLMDB"),
                .product(name: "LocalLMDBModels", package: "LocalLMDB"),
                .product(name: "Benchmark", package: "package-benchmark"),
            ],
            path: "Benchmarks/LocalLMDBBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "package-benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)

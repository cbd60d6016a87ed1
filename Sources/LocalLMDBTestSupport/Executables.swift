import Foundation

/// An executable of this package that the tests launch (the test helper, the `localdb` tool),
/// built next to the test bundle; nil when it is not there.
public func executableBesideTests(named name: String) -> URL? {
    let candidates = [
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
        Bundle.main.bundleURL.deletingLastPathComponent(),
        Bundle.main.bundleURL,
    ]
    return candidates.map { $0.appendingPathComponent(name) }.first { FileManager.default.isExecutableFile(atPath: $0.path) }
}

import LocalLMDB

// Codable models shared with the child process, for tests that may crash the process that
// runs them (a value nested far beyond the stored limit).

/// One link of a chain of nested plain `Codable` objects.
public final class CodableChainLink: Codable {
    public var next: CodableChainLink?

    public init() {}

    /// A chain of `length` links, built without recursion.
    public static func chain(length: Int) -> CodableChainLink {
        let root = CodableChainLink()
        var link = root
        for _ in 1..<max(length, 1) {
            let next = CodableChainLink()
            link.next = next
            link = next
        }
        return root
    }
}

/// A model holding a chain of links: a chain `length` links long is nested `length + 1` levels deep.
public struct CodableDeepChain: Codable, Persistable {
    public var root: CodableChainLink

    public init(root: CodableChainLink) {
        self.root = root
    }
}

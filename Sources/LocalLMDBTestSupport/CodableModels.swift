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

/// A `Codable` base class whose subclass `CodableCircle` is written by a child process only: a
/// test reads it in a process that has never used the subclass.
open class CodableShape: Codable, Persistable {
    public let name: String

    public init(name: String) {
        self.name = name
    }

    private enum CodingKeys: String, CodingKey {
        case name
    }

    public required init(from decoder: any Decoder) throws {
        name = try decoder.container(keyedBy: CodingKeys.self).decode(String.self, forKey: .name)
    }

    open func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
    }
}

public final class CodableCircle: CodableShape {
    public let radius: Double

    public init(name: String, radius: Double) {
        self.radius = radius
        super.init(name: name)
    }

    private enum CodingKeys: String, CodingKey {
        case radius
    }

    public required init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        radius = try container.decode(Double.self, forKey: .radius)
        try super.init(from: container.superDecoder())
    }

    public override func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(radius, forKey: .radius)
        try super.encode(to: container.superEncoder())
    }
}

/// Holds a shape, nested with its class name.
public struct CodableDrawing: Codable, Persistable {
    public var shapes: [CodableShape]

    public init(shapes: [CodableShape]) {
        self.shapes = shapes
    }
}

/// A `Codable` model with a compound index, written by the tests and by the helper process.
public struct Ticket: Codable, Persistable, Sendable {
    public static let indexes: [Index] = [.on("queue", "priority", counted: true)]
    public var queue: String
    public var priority: Int
    public var title: String

    public init(queue: String, priority: Int, title: String) {
        self.queue = queue
        self.priority = priority
        self.title = title
    }
}

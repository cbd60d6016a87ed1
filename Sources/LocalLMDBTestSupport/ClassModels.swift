import LocalLMDB

// Class hierarchies for the tests of class resolution across processes. Each is used by one
// test only, which relies on this process not having used the subclass before the test reads
// it (the child process writes it).

/// A base class whose subclass `Circle` is written by a child process.
open class Shape: Storable {
    public let name: String

    public init(name: String) {
        self.name = name
    }

    public required init(dataObject: DataObject) {
        name = dataObject.get("name")
    }

    open func toDataObject() -> DataObject {
        DataObject(self).add(key: "name", value: name)
    }
}

public final class Circle: Shape {
    public let radius: Double

    public init(name: String, radius: Double) {
        self.radius = radius
        super.init(name: name)
    }

    public required init(dataObject: DataObject) {
        radius = dataObject.get("radius")
        super.init(dataObject: dataObject)
    }

    public override func toDataObject() -> DataObject {
        super.toDataObject().add(key: "radius", value: radius)
    }
}

/// Holds a `Shape`, which may be a `Circle`.
public final class Drawing: Storable {
    public let shape: Shape

    public init(shape: Shape) {
        self.shape = shape
    }

    public required init(dataObject: DataObject) {
        shape = dataObject.getObject("shape", type: Shape.self)
    }

    public func toDataObject() -> DataObject {
        DataObject(self).add(key: "shape", value: shape)
    }
}

/// A base class whose subclass `Hammer` is written by a child process and then recorded as owned
/// by a type no process can find: as if `Hammer` had moved to another module.
open class Tool: Storable {
    public let label: String

    public init(label: String) {
        self.label = label
    }

    public required init(dataObject: DataObject) {
        label = dataObject.get("label")
    }

    open func toDataObject() -> DataObject {
        DataObject(self).add(key: "label", value: label)
    }
}

public final class Hammer: Tool {
    public let weight: Int

    public init(label: String, weight: Int) {
        self.weight = weight
        super.init(label: label)
    }

    public required init(dataObject: DataObject) {
        weight = dataObject.get("weight")
        super.init(dataObject: dataObject)
    }

    public override func toDataObject() -> DataObject {
        super.toDataObject().add(key: "weight", value: weight)
    }
}

/// Holds a `Tool`, which may be a `Hammer`.
public final class Toolbox: Storable {
    public let tool: Tool

    public init(tool: Tool) {
        self.tool = tool
    }

    public required init(dataObject: DataObject) {
        tool = dataObject.getObject("tool", type: Tool.self)
    }

    public func toDataObject() -> DataObject {
        DataObject(self).add(key: "tool", value: tool)
    }
}

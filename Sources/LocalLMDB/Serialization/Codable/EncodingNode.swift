import Foundation
import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

/// Shared by the encoders of one value.
final class EncodingState {
    var failure: EncodingError?
}

/// A container's contents while it is being encoded.
///
/// A member is written as `JSONEncoder` writes it: the last write wins, whether a value (`null`
/// and `Encodable`s included), a nested container or a super encoder; a nested container asked
/// for a member that holds an object (for a keyed one) or an array (for an unkeyed one)
/// continues it; and a container or super encoder whose member was written again is cut off,
/// so what is written into it afterwards is not stored.
final class EncodingNode {
    enum Shape { case empty, object, array, single }
    var shape = Shape.empty
    var object = JSONObject()
    var elements: [JSONValue] = []
    var single = JSONValue.null
    /// Nodes handed out for later, with the member (`key`) or element (`index`) they fill.
    var deferred: [(key: String?, index: Int, node: EncodingNode)] = []
    /// The members that nodes handed out will fill: each node's position in `deferred`. A
    /// member written again since is not here (or names another node), and its node is left out.
    private var pendingMembers: [String: Int] = [:]

    /// The finished value; a value that encoded nothing is an empty object.
    func value() -> JSONValue {
        if !deferred.isEmpty { finishDeferred() }
        return ownValue
    }

    /// The value, the deferred nodes' values in place.
    private var ownValue: JSONValue {
        switch shape {
        case .empty: return .object(JSONObject())
        case .object: return .object(object)
        case .array: return .array(elements)
        case .single: return single
        }
    }

    /// Puts each deferred node's value in its place, those of the nodes deferred in it first:
    /// depth first, without recursion (containers nest as deep as the limit).
    private func finishDeferred() {
        var path: [(node: EncodingNode, next: Int)] = [(self, 0)]
        while let (node, next) = path.last {
            if next < node.deferred.count {
                path[path.count - 1].next = next + 1
                guard node.fills(next) else { continue }
                let child = node.deferred[next].node
                if child.deferred.isEmpty {
                    node.fill(next, with: child.ownValue)
                } else {
                    path.append((child, 0))
                }
            } else {
                path.removeLast()
                node.deferred = []
                node.pendingMembers = [:]
                if let (parent, filled) = path.last { parent.fill(filled - 1, with: node.ownValue) }
            }
        }
    }

    /// Whether the deferred node at `position` still fills its member or element.
    private func fills(_ position: Int) -> Bool {
        deferred[position].key.map { pendingMembers[$0] == position } ?? true
    }

    /// Puts `value` where the deferred node at `position` goes.
    private func fill(_ position: Int, with value: JSONValue) {
        let (key, index, _) = deferred[position]
        if let key {
            object.set(key, value)
        } else if index < elements.count {
            elements[index] = value
        }
    }

    /// Stores `value` as the member `key`, in place of what it held.
    @inline(__always)
    func set(_ key: String, _ value: JSONValue) {
        object.set(key, value)
        if !pendingMembers.isEmpty { pendingMembers[key] = nil }
    }

    /// The node that fills the member `key` with a container of `shape` (`.empty` for a super
    /// encoder's, which always replaces): the node already handed out for it when it has that
    /// shape, else a new one, which continues the object or array the member holds.
    func member(_ key: String, as shape: EncodingNode.Shape) -> EncodingNode {
        if let position = pendingMembers[key] {
            let pending = deferred[position].node
            if shape != .empty, pending.shape == shape { return pending }
        }
        let child = EncodingNode()
        child.shape = shape
        if pendingMembers[key] == nil {
            switch (shape, object[key]) {
            case let (.object, .object(held)?): child.object = held
            case let (.array, .array(held)?): child.elements = held
            default: break
            }
        }
        object.set(key, .null)  // Holds the member's place until the child is finished.
        pendingMembers[key] = deferred.count
        deferred.append((key, 0, child))
        return child
    }

    /// A node to fill the next element with a container of `shape`, and its index.
    func element(as shape: EncodingNode.Shape) -> (node: EncodingNode, index: Int) {
        let child = EncodingNode()
        child.shape = shape
        let index = elements.count
        elements.append(.null)  // Holds the element's place until the child is finished.
        deferred.append((nil, index, child))
        return (child, index)
    }
}

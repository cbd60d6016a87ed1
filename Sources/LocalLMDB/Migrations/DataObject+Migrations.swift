import LocalLMDBJSON

extension DataObject {
    /// Renames the field `key` to `newKey`, keeping its value and its place among the fields;
    /// a field already named `newKey` is removed first. For a migration's steps, and any code
    /// that reshapes stored documents.
    /// - Returns: Whether the object had a field `key` (when not, nothing changes).
    @discardableResult
    public func renameField(_ key: String, to newKey: String) -> Bool {
        let (old, new) = (FieldKey.stored(key), FieldKey.stored(newKey))
        var members = fields.members
        guard members.contains(where: { $0.key == old }) else { return false }
        guard old != new else { return true }
        members.removeAll { $0.key == new }
        guard let at = members.firstIndex(where: { $0.key == old }) else { return false }
        members[at].key = new
        replaceFields(JSONObject(members: members))
        return true
    }

    /// Removes the field `key`.
    /// - Returns: Whether the object had it.
    @discardableResult
    public func removeField(_ key: String) -> Bool {
        let stored = FieldKey.stored(key)
        var members = fields.members
        let before = members.count
        members.removeAll { $0.key == stored }
        guard members.count != before else { return false }
        replaceFields(JSONObject(members: members))
        return true
    }

    /// Whether the object has a field `key` (of any value, `null` included).
    public func hasField(_ key: String) -> Bool {
        if let probe { probe.note(key, []) }
        let stored = FieldKey.stored(key)
        return fields.members.contains { $0.key == stored }
    }

    /// Sets the class member to `name`: the object is stored as that class from then on.
    func setClassName(_ name: String) {
        var members = fields.members
        if let at = members.firstIndex(where: { $0.key == Self.classNameKey }) {
            members[at].value = .string(name)
        } else {
            members.insert(JSONObject.Member(key: Self.classNameKey, value: .string(name)), at: 0)
        }
        replaceFields(JSONObject(members: members))
    }
}

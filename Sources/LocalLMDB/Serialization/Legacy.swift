/// Renames of stored classes, so that data written under an old class name is read as the new one.
///
/// Register refactors at start-up, before reading:
/// ```swift
/// Legacy.addClassRefactor(old: "Person", new: "Human")
/// ```
/// Chains are followed (`A → B`, then `B → C` reads `A` records as `C`). Reading `C`, counting
/// it, listing its ids and deleting it all cover every name that leads to `C`.
/// Safe to call from any thread.
public enum Legacy {
    private static let refactors = Locked<[String: String]>([:])

    /// Records that class `old` is now called `new`.
    public static func addClassRefactor(old: String, new: String) {
        refactors.withLock { $0[old] = new }
    }

    /// The current name for a stored class name, following chains of refactors.
    static func currentName(of name: String) -> String {
        refactors.withLock { map in resolve(name, in: map) }
    }

    /// `current` followed by every stored name that resolves to it.
    static func allNames(of current: String) -> [String] {
        refactors.withLock { map in
            var names = [current]
            for old in map.keys.sorted() where old != current && resolve(old, in: map) == current {
                names.append(old)
            }
            return names
        }
    }

    /// Follows `map` from `name`; stops at a name with no refactor, or where a cycle would repeat.
    private static func resolve(_ name: String, in map: [String: String]) -> String {
        var current = name
        var steps = 0
        while let next = map[current], steps < map.count {
            current = next
            steps += 1
        }
        return current
    }
}

import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine

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
    /// Counts changes to `refactors`: each thread's cache of answers (`ReadScratch`) is good
    /// while it is unchanged, so reads take no lock here (one atomic load of a word that only
    /// `addClassRefactor` writes).
    private static let generation = AtomicLines(lines: 1)

    /// Records that class `old` is now called `new`.
    public static func addClassRefactor(old: String, new: String) {
        refactors.withLock { map in
            map[old] = new
            generation.add(1, line: 0)
        }
    }

    /// Forgets the refactor of `old`: for tests, which must leave no rename behind for the
    /// tests that run after them in the same process.
    static func removeClassRefactor(old: String) {
        refactors.withLock { map in
            map[old] = nil
            generation.add(1, line: 0)
        }
    }

    /// The current name for a stored class name, following chains of refactors.
    static func currentName(of name: String) -> String {
        let cache = cache()
        if let known = cache.currentNames[name] { return known }
        let current = refactors.withLock { map in resolve(name, in: map) }
        cache.currentNames[name] = current
        return current
    }

    /// `current` followed by every stored name that resolves to it.
    static func allNames(of current: String) -> [String] {
        let cache = cache()
        if let known = cache.allNames[current] { return known }
        let names = refactors.withLock { map in
            var names = [current]
            for old in map.keys.sorted() where old != current && resolve(old, in: map) == current {
                names.append(old)
            }
            return names
        }
        cache.allNames[current] = names
        return names
    }

    /// The calling thread's cache, emptied first if a refactor was added since it was filled.
    /// (Loading the generation before reading `refactors` means an answer cached under a
    /// generation was computed from that generation's map or a later one.)
    private static func cache() -> ClassCache.LegacyCache {
        let cache = ClassCache.current.legacy
        let now = generation.load(line: 0)
        if cache.generation != now {
            cache.currentNames.removeAll()
            cache.allNames.removeAll()
            cache.generation = now
        }
        return cache
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

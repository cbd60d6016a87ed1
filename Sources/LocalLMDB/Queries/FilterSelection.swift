import Foundation
import LocalLMDBLMDB
import LocalLMDBStore

/// The results a `ModelFilter` keeps of the candidates a store's query gives, offered one by
/// one in the store's order: those its predicates accept, after its offset, at most its limit;
/// or, for an order sorted in memory, every one accepted, sorted and paged at the end.
struct FilterSelection<T: Persistable> {
    typealias Result = (model: T, id: String?)

    let filter: ModelFilter<T>
    /// Whether results carry their ids.
    let keepsIDs: Bool
    private(set) var results: [Result] = []
    /// The position of the last result taken (for a page's cursor).
    private(set) var last: IndexCursor?
    private var skipped = 0
    private var seen: Set<String> = []

    /// `keepsIDs`: the results carry their ids (so does every result sorted in memory: ties
    /// are ordered by id).
    init(_ filter: ModelFilter<T>, keepsIDs: Bool) {
        self.filter = filter
        self.keepsIDs = keepsIDs || !filter.sort.isEmpty
    }

    /// Whether the results' positions matter: a page that may end before the last match gives
    /// the position after its last (an order sorted in memory gives none).
    var needsPositions: Bool { filter.sort.isEmpty && filter.limit != nil }

    /// Whether a later candidate can still be a result.
    var wantsMore: Bool {
        guard filter.sort.isEmpty, let limit = filter.limit else { return true }
        return results.count < limit
    }

    /// The candidate `model` is one the predicates accept (and not a record given before):
    /// decides it with the model while its record is at hand. `id` is the record's.
    mutating func accepts(_ model: T, id: () -> String) throws(DatabaseError) -> Bool {
        if filter.deduplicates {
            guard seen.insert(id()).inserted else { return false }
        }
        return try filter.accepts(model)
    }

    /// Takes an accepted candidate, at `position` in the store's order: skipped while the offset
    /// lasts (an order in memory pages at the end).
    mutating func take(_ model: T, id: String?, position: IndexCursor?) {
        assert(id != nil || !keepsIDs, "a result kept with its id has one")
        guard wantsMore else { return }
        if filter.sort.isEmpty, skipped < filter.offset {
            skipped += 1
            return
        }
        results.append((model, id))
        last = position
    }

    /// The results in their order, paged; and the position after the last (nil when sorted in memory).
    func finished() -> (results: [Result], last: IndexCursor?) {
        guard !filter.sort.isEmpty else { return (results, last) }
        // Ties come by id, in the first descriptor's direction, as an index's order gives them.
        let reverseTies = filter.sort.first?.order == .reverse
        let sorted = results.indices.sorted { left, right in
            for descriptor in filter.sort {
                switch descriptor.compare(results[left].model, results[right].model) {
                case .orderedAscending: return true
                case .orderedDescending: return false
                case .orderedSame: continue
                }
            }
            let (leftID, rightID) = (results[left].id ?? "", results[right].id ?? "")
            return reverseTies ? rightID.utf8.lexicographicallyPrecedes(leftID.utf8) : leftID.utf8.lexicographicallyPrecedes(rightID.utf8)
        }
        let paged = sorted.dropFirst(filter.offset).prefix(filter.limit ?? .max)
        return (paged.map { results[$0] }, nil)
    }
}

extension ModelFilter {
    /// How many candidates the store's query reads at a time: reads that stop early (a limit)
    /// read a few more than they need, then more and more; others read all at once. A query
    /// no stored index serves reads every record whatever its limit: all at once too.
    var firstChunk: Int? {
        guard servedByIndex, sort.isEmpty, let limit else { return nil }
        let (wanted, overflow) = offset.addingReportingOverflow(limit)
        return overflow ? nil : Swift.min(Swift.max(wanted + wanted / 2, 32), 4096)
    }
}

#if LOCALLMDB_MODELS
import Foundation
import LocalLMDB
import LocalLMDBModelTestSupport
import LocalLMDBPostgres
import LocalLMDBTestSupport
import Testing

extension PostgresTests {
    /// `#Predicate` queries on the server engine: the random-predicate oracle of the LMDB tests,
    /// against `Array.filter` of the same predicates.
    @Suite("PostgreSQL predicate queries", .serialized)
    struct PostgresPredicateTests {
        @Test("Random #Predicate and SortDescriptor queries give Array.filter's answers on the server engine")
        func randomPredicates() async throws {
            try await PostgresServer.withDatabase { store in
                var random = SeededGenerator(state: 0x5EED_38)
                let members = (0..<200).map { (PredicateOracle.id($0), PredicateOracle.member(&random)) }
                try await store.write(contentsOf: members.map { Record(id: $0.0, data: $0.1) })
                let found = try await PredicateOracle.disagreements(in: store, members: members, rounds: 80, seed: 0x5EED_39)
                #expect(found.isEmpty, "\(found.prefix(5).joined(separator: "\n"))")
            }
        }
    }
}
#endif

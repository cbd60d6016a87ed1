import Foundation
@testable import LocalLMDB
import LocalLMDBTestSupport
import Testing

@Suite("Queries against an oracle")
struct QueryOracleTests {
    @Test(.serialized, arguments: 1...24)
    func randomHistoriesAgreeWithAnInMemoryFilter(seed: UInt64) async throws {
        try await withDatabase { database, _ in
            let problems = try await QueryOracle.run(seed: seed, on: database)
            #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
            let report = try await database.verifyIntegrity()
            #expect(report.isConsistent, "seed \(seed): \(report)")
        }
    }
}

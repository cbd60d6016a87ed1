import Foundation
import LocalLMDB
import LocalLMDBPostgres
import LocalLMDBTestSupport
import PostgresNIO
import Testing

extension PostgresTests {
    /// Stores over TLS, against the tests' server, which speaks TLS with a certificate for
    /// 127.0.0.1 signed by a certificate authority of its own, and has a database that accepts
    /// TLS connections only (`scripts/postgres`).
    @Suite("PostgreSQL over TLS", .serialized)
    struct TLSTests {
        /// The TLS-only database and the authority's certificate file.
        static func server() throws -> (database: String, caFile: String) {
            let address = try PostgresServer.address.get()
            guard let database = address.tlsDatabase, let caFile = address.caFile else {
                throw PostgresServer.ServerUnavailable(reason: "the server was started without TLS (scripts/postgres stop, then start)")
            }
            return (database, caFile)
        }

        /// TLS required, the server's certificate verified against `trustRoots` and its name checked.
        static func tls(trusting trustRoots: NIOSSLTrustRoots) throws -> PostgresConnection.Configuration.TLS {
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.trustRoots = trustRoots
            configuration.certificateVerification = .fullVerification
            return .require(try NIOSSLContext(configuration: configuration))
        }

        /// The message of the `server` error that opening a store with `configuration` fails with.
        static func openingFails(_ configuration: PostgresConnection.Configuration) async throws -> String {
            do {
                let store = try await PostgresStore(configuration: configuration, name: PostgresServer.uniqueStore(), connections: 1)
                await store.close()
                Issue.record("the store opened")
                return ""
            } catch let error as LocalDatabaseError {
                guard case let .server(_, message) = error else { throw error }
                return message
            }
        }

        @Test("A store over TLS, the server's certificate verified against its authority, writes, reads and observes")
        func verified() async throws {
            let (database, caFile) = try Self.server()
            let tls = try Self.tls(trusting: .certificates(try NIOSSLCertificate.fromPEMFile(caFile)))
            let configuration = try PostgresServer.configuration(database: database, tls: tls)
            let name = PostgresServer.uniqueStore()
            try await closing(PostgresStore(configuration: configuration, name: name, connections: 2)) { store in
                let token = try await store.changeToken()
                try await store.write(Record(id: "a", data: Note(text: "over TLS")))
                let note: Note? = try await store.read(id: "a")
                #expect(note?.text == "over TLS")
                #expect(try await store.changes(since: token).commits.map(\.changes) == [[.written(id: "a", className: "Note")]])
            }
            // The server's own view of a connection made the same way.
            let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: Logger(label: "tests"))
            let rows = try await connection.query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", logger: Logger(label: "tests"))
            var encrypted: [Bool] = []
            for try await ssl in rows.decode(Bool.self) { encrypted.append(ssl) }
            try await connection.close()
            #expect(encrypted == [true])
        }

        @Test("A server whose certificate no trusted authority signed is refused: the store does not open")
        func untrustedServer() async throws {
            let (database, _) = try Self.server()
            // The system's authorities: none of them signed the test cluster's certificate.
            let configuration = try PostgresServer.configuration(database: database, tls: Self.tls(trusting: .default))
            let message = try await Self.openingFails(configuration)
            #expect(message.lowercased().contains("certificate"), "\(message)")
        }

        @Test("The TLS-only database refuses a connection without TLS: credentials never cross in the clear")
        func plaintextRefused() async throws {
            let (database, _) = try Self.server()
            let configuration = try PostgresServer.configuration(database: database, tls: .disable)
            let message = try await Self.openingFails(configuration)
            #expect(message.contains("pg_hba.conf rejects connection"), "\(message)")
        }
    }
}

import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// A refresh by the command-line tool costs one request: the provider's metadata and key set are
/// kept in the store for every process, and fetched again only when they expire or a new key
/// signs the ID token.
@Suite("latchkey refreshes in one round trip")
struct CLIRoundTripTests: DevProviderCLITest {
    @Test("a second process refreshes with the first one's metadata and key set; a new key is fetched once")
    func oneRoundTrip() async throws {
        // Kept for an hour: the provider's default minute can pass between the login and the last
        // refresh when every process runs under the thread sanitizer, and then a discovery request
        // is right.
        var configuration = DevProviderConfiguration.default
        configuration.documentMaxAge = 3_600
        try await withDevices(configuration) { dev, a, _ in
            #expect(try await login(a, "alice").status == 0)
            dev.faults.resetCounters()
            for _ in 0..<3 {
                let refreshed = try await a.run("refresh")
                #expect(refreshed.status == 0, "\(refreshed.stderr)")
            }
            #expect(dev.faults.count("token.refresh_token") == 3)
            #expect(dev.faults.count(.discovery) == 0, "the login kept the metadata in the store")
            #expect(dev.faults.count(.jwks) == 0)
            // The provider signs with a new key: the first refresh after it fetches the key set once.
            try await dev.rotateKeys()
            dev.faults.resetCounters()
            for _ in 0..<3 {
                let refreshed = try await a.run("refresh")
                #expect(refreshed.status == 0, "\(refreshed.stderr)")
            }
            #expect(dev.faults.count("token.refresh_token") == 3)
            #expect(dev.faults.count(.jwks) == 1, "an unknown key fetches the key set, and the store keeps it")
            #expect(dev.faults.count(.discovery) == 0)
        }
    }
}

import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// What a provider publishes is kept only once it passed its checks, and can be forgotten.
@Suite("latchkey and the documents providers publish")
struct CLIProviderDocumentTests: DevProviderCLITest {
    @Test(
        "metadata naming another issuer is refused and never kept: once the provider is fixed, the next command works")
    func wrongIssuerNotKept() async throws {
        // Kept for a day, were it kept at all.
        var configuration = DevProviderConfiguration.default
        configuration.documentMaxAge = 86_400
        try await withDevices(configuration) { dev, a, _ in
            // Both places metadata is published at name an impostor.
            for endpoint in [DevProviderEndpoint.discovery, .metadata] {
                dev.faults.set(
                    DevProviderFault(replacedFields: ["issuer": #""https://impostor.example""#]), for: endpoint)
            }
            // The store's copies (kept when the provider was added) are dropped and fetched again.
            let refresh = try await a.run("provider", "refresh", "dev")
            #expect(refresh.status == 1, "\(refresh.stderr)")
            #expect(refresh.stderr.contains("another issuer"), "\(refresh.stderr)")
            let refused = try await login(a, "alice")
            #expect(refused.status == 1, "\(refused.stderr)")
            #expect(refused.stderr.contains("another issuer"), "\(refused.stderr)")
            dev.faults.clear()
            let fixed = try await login(a, "alice")
            #expect(fixed.status == 0, "a document that failed its checks was kept: \(fixed.stderr)")
        }
    }

    @Test("provider refresh fetches the documents again; provider remove forgets them")
    func refreshAndRemove() async throws {
        var configuration = DevProviderConfiguration.default
        configuration.documentMaxAge = 86_400
        try await withDevices(configuration) { dev, a, _ in
            #expect(try await login(a, "alice").status == 0)
            dev.faults.resetCounters()
            // Kept: another command fetches nothing.
            #expect(try await a.run("userinfo").status == 0)
            #expect(dev.faults.count(.discovery) == 0)
            let refreshed = try await a.run("provider", "refresh", "dev")
            #expect(refreshed.status == 0, "\(refreshed.stderr)")
            #expect(dev.faults.count(.discovery) == 1)
            #expect(dev.faults.count(.jwks) == 1)
            let unknown = try await a.run("provider", "refresh", "nope")
            #expect(unknown.status != 0)
            #expect(!unknown.stderr.isEmpty)
            // Removed and added again: fetched anew.
            #expect(try await a.run("provider", "remove", "dev").status == 0)
            let added = try await a.run(
                "provider", "add", "dev", "--allow-password-grant", "--issuer", dev.issuer.absoluteString,
                "--client-id", "latchkey-cli")
            #expect(added.status == 0, "\(added.stderr)")
            dev.faults.resetCounters()
            #expect(try await a.run("userinfo").status == 0)
            #expect(dev.faults.count(.discovery) == 1, "the removed provider's documents were still kept")
        }
    }
}

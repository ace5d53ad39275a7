import Foundation
import Latchkey
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// A provider's documents past their lifetime (the development provider's: `max-age=60`, with
/// an `ETag`): used as they are while they are revalidated, within a bound, so that a refresh
/// stays one round trip; revalidated with `If-None-Match`.
@Suite("Provider documents: stale while revalidated")
struct DocumentRevalidationTests {
    /// Polls `condition` for a few seconds: a background revalidation is on its way.
    func eventually(_ condition: () async throws -> Bool) async throws -> Bool {
        for _ in 0..<200 {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(25))
        }
        return try await condition()
    }

    @Test("freshness as a value: fresh, stale for its lifetime again (an hour at most), claimed, then expired")
    func freshness() {
        let fetched = Date(timeIntervalSinceReferenceDate: 0)
        var document = ProviderDocument(body: Data(), fetchedAt: fetched, expiresAt: fetched.addingTimeInterval(60))
        #expect(DocumentFreshness(document, now: fetched.addingTimeInterval(59)) == .fresh)
        #expect(DocumentFreshness(document, now: fetched.addingTimeInterval(61)) == .stale(claimed: false))
        #expect(DocumentFreshness(document, now: fetched.addingTimeInterval(121)) == .expired)
        document.revalidationClaimedUntil = fetched.addingTimeInterval(90)
        #expect(DocumentFreshness(document, now: fetched.addingTimeInterval(80)) == .stale(claimed: true))
        #expect(DocumentFreshness(document, now: fetched.addingTimeInterval(100)) == .stale(claimed: false))
        #expect(
            DocumentFreshness(document, now: fetched.addingTimeInterval(125)) == .expired, "a claim stretches nothing")
        let day = ProviderDocument(body: Data(), fetchedAt: fetched, expiresAt: fetched.addingTimeInterval(86_400))
        #expect(DocumentFreshness(day, now: fetched.addingTimeInterval(86_400 + 3_599)) == .stale(claimed: false))
        #expect(DocumentFreshness(day, now: fetched.addingTimeInterval(86_400 + 3_601)) == .expired)
    }

    @Test("a stale metadata document and key set are used at once and revalidated once (304); past the bound, first")
    func staleWhileRevalidate() async throws {
        let clock = TestClock()
        try await withHarness(.dev, clock: clock) { harness in
            let dev = try #require(harness.dev)
            let alice = try await DPoPTests.signIn(harness)
            // Each call as a new process would: nothing in memory, the store's copies only.
            @Sendable func process() async -> Credential {
                await harness.store.credential(
                    alice.id,
                    provider: OpenIDProvider(
                        configuration: harness.provider.configuration, transport: transport, clock: clock))
            }
            let documents = try #require(harness.store.capabilities.providerDocuments)
            let key = "discovery \(dev.issuer.absoluteString)/.well-known/openid-configuration"
            let first = try #require(try await documents.providerDocument(for: key))
            #expect(first.entityTag != nil, "the provider's ETag is kept")

            dev.faults.resetCounters()
            _ = try await process().refresh()
            #expect(dev.faults.count(.discovery) == 0 && dev.faults.count(.jwks) == 0, "fresh: one round trip")

            clock.advance(90)  // 30 s past the 60 s lifetime: stale, within the bound
            dev.faults.resetCounters()
            let refreshes = try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<20 { group.addTask { _ = try await process().accessToken(validFor: 3_000) } }
                try await group.waitForAll()
                return dev.faults.count("token.refresh_token")
            }
            #expect(refreshes == 1)
            #expect(
                try await eventually {
                    try await documents.providerDocument(for: key)?.fetchedAt == clock.date
                        && dev.faults.count(.discovery) >= 1
                }, "revalidated in the background")
            let revalidated = try #require(try await documents.providerDocument(for: key))
            #expect(revalidated.body == first.body, "304: the body kept")
            #expect(revalidated.expiresAt == clock.date.addingTimeInterval(60))
            #expect(revalidated.revalidationClaimedUntil == nil)
            print(
                "stale documents, 20 callers of one refresh: \(dev.faults.count(.discovery)) metadata and \(dev.faults.count(.jwks)) key-set revalidation(s)"
            )
            #expect(dev.faults.count(.discovery) == 1, "one claim of twenty callers wins")

            clock.advance(600)  // far past the bound: revalidated before it is used
            dev.faults.resetCounters()
            _ = try await process().refresh()
            #expect(dev.faults.count(.discovery) == 1)
        }
    }
}

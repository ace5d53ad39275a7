import Foundation
import Latchkey
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// A refresh answer refused as a whole still carried the provider's rotated refresh token: it is
/// kept (the only live one), and nothing else of the answer is. Against the development
/// provider, which ends the grant when an old refresh token comes back.
@Suite("Refused refresh answers")
struct RefusedRefreshAnswerTests {
    /// Alice signs in and out everywhere while the provider's global sign-out is away: the step
    /// is queued. Then her access token dies, so that sending it takes a refresh.
    static func queueGlobalSignOut(_ harness: Harness) async throws {
        let dev = try #require(harness.dev)
        let credential = try await harness.provider.signIn(
            .password(username: "alice", password: "alice-password"), into: harness.store)
        let accessToken = try #require(try await credential.token.accessToken)
        dev.faults.set(.status(503), for: .globalSignOut)
        let queued = await harness.store.signOut(.current, options: .global)
        #expect(queued.signedOutLocally && !queued.failures.isEmpty, "\(queued)")
        dev.faults.clear(.globalSignOut)
        try await harness.provider.revoke(accessToken, kind: .accessToken)
    }

    @Test(
        "a refresh answer whose token_type is not a string is refused, and the rotated refresh token it carries is kept",
        arguments: ["123", #"{"kind":"Bearer"}"#, "null"])
    func unreadableTokenType(_ value: String) async throws {
        try await withHarness(.dev) { harness in
            let dev = try #require(harness.dev)
            let credential = try await harness.provider.signIn(
                .password(username: "alice", password: "alice-password"), into: harness.store)
            let before = try await credential.token
            dev.faults.set(DevProviderFault(replacedFields: ["token_type": value], remaining: 1), for: .token)
            let error = await #expect(throws: ProviderError.self) { try await credential.refresh() }
            #expect(error?.code == .invalidResponse, "\(error.map { "\($0)" } ?? "")")
            #expect(error?.underlying == nil, "the refusal carries no token")
            let kept = try await credential.token
            #expect(kept.refreshToken != before.refreshToken, "the rotated refresh token was stored")
            #expect(kept.accessToken == before.accessToken, "nothing else of the answer")
            #expect(try await credential.stored().state.needsSignIn == false)
            let next = try await credential.refresh()
            #expect(next.refreshToken != kept.refreshToken, "the grant is alive: the kept token was the live one")
        }
    }

    @Test(
        "an application's own provider refuses an answer as a value, with its rotated refresh token: the credential keeps that token, and the refusal is thrown"
    )
    func providerRefusesAsValue() async throws {
        try await withHarness(.dev) { harness in
            let signedIn = try await harness.provider.signIn(
                .password(username: "alice", password: "alice-password"), into: harness.store)
            let before = try await signedIn.token
            var refusing = ForwardingProvider(harness.provider)
            refusing.answering = { answer in
                guard case .token(let token) = answer, let rotated = token.refreshToken else { return answer }
                return .refused(
                    ProviderError(.invalidResponse, endpoint: .token, reason: "The application refused the answer."),
                    rotatedRefreshToken: rotated)
            }
            let credential = await harness.store.credential(signedIn.id, provider: refusing)
            let error = await #expect(throws: ProviderError.self) { try await credential.refresh() }
            #expect(error?.reason == "The application refused the answer.")
            let kept = try await signedIn.token
            #expect(kept.refreshToken != before.refreshToken, "the rotated refresh token was stored")
            #expect(kept.accessToken == before.accessToken, "nothing else of the answer")
            // Neither the answer's text nor its mirror shows the token.
            let answer = RefreshAnswer.refused(
                error ?? ProviderError(.invalidResponse, reason: ""), rotatedRefreshToken: "rt-secret")
            #expect(!"\(answer)".contains("rt-secret") && !String(reflecting: answer).contains("rt-secret"))
            #expect(Mirror(reflecting: answer).children.isEmpty)
            // The kept token was the live one: the development provider ends a grant whose old
            // refresh token comes back, and this refresh succeeds.
            let next = try await signedIn.refresh()
            #expect(next.refreshToken != kept.refreshToken)
        }
    }

    @Test(
        "a DPoP-bound credential answered with bearer tokens never downgrades: refused as the provider's error, the bound tokens kept"
    )
    func boundNeverDowngrades() async throws {
        try await withHarness(.dev, tweak: { $0.dpop = .required }) { harness in
            let dev = try #require(harness.dev)
            let credential = try await harness.provider.signIn(
                .password(username: "alice", password: "alice-password"), into: harness.store)
            let before = try await credential.token
            #expect(before.tokenType == "DPoP")
            dev.faults.set(DevProviderFault(replacedFields: ["token_type": #""Bearer""#], remaining: 1), for: .token)
            let error = await #expect(throws: ProviderError.self) { try await credential.refresh() }
            #expect(error?.code == .dpopNotHonored, "\(error.map { "\($0)" } ?? "")")
            let kept = try await credential.token
            #expect(kept.tokenType == "DPoP")
            #expect(kept.dpop == before.dpop)
            #expect(kept.accessToken == before.accessToken)
            #expect(kept.refreshToken != before.refreshToken, "the rotated refresh token was stored")
            // Every request still carries a proof, and the grant is alive.
            #expect(try await credential.userInfo()["preferred_username"] == .string("alice"))
            let next = try await credential.refresh()
            #expect(next.tokenType == "DPoP")
        }
    }

    @Test("a sign-in whose provider ignores the proof under DPoP required says so, and leaves no grant alive")
    func signInWithoutBinding() async throws {
        try await withHarness(.dev, tweak: { $0.dpop = .required }) { harness in
            let dev = try #require(harness.dev)
            dev.faults.set(DevProviderFault(replacedFields: ["token_type": #""Bearer""#], remaining: 1), for: .token)
            let error = await #expect(throws: ProviderError.self) {
                try await harness.provider.signIn(
                    .password(username: "alice", password: "alice-password"), into: harness.store)
            }
            #expect(error?.code == .dpopNotHonored)
            #expect(error?.description.contains("DPoP") == true)
            #expect(try await harness.store.all().isEmpty)
        }
    }

    @Test(
        "an access token with CR, LF, ESC or NUL is refused: no sign-in is stored, and a refresh keeps its rotated refresh token",
        arguments: [#""Injected\r\nX-Evil: 1""#, #""Injected\u001b]52;c;cGF5bG9hZA==\u0007""#, #""Injected\u0000""#])
    func accessTokenSyntax(_ value: String) async throws {
        try await withHarness(.dev) { harness in
            let dev = try #require(harness.dev)
            dev.faults.set(DevProviderFault(replacedFields: ["access_token": value], remaining: 1), for: .token)
            let refused = await #expect(throws: ProviderError.self) {
                try await harness.provider.signIn(
                    .password(username: "alice", password: "alice-password"), into: harness.store)
            }
            #expect(refused?.code == .invalidResponse)
            #expect(refused?.description.contains("b64token") == true, "\(refused.map { "\($0)" } ?? "")")
            #expect(refused?.description.contains("Injected") == false)
            #expect(try await harness.store.all().isEmpty)
            #expect(await dev.liveGrants(of: "alice") == 0, "the refused answer's grant was revoked, not left alive")

            let credential = try await harness.provider.signIn(
                .password(username: "alice", password: "alice-password"), into: harness.store)
            let before = try await credential.token
            dev.faults.set(DevProviderFault(replacedFields: ["access_token": value], remaining: 1), for: .token)
            let error = await #expect(throws: ProviderError.self) { try await credential.refresh() }
            #expect(error?.code == .invalidResponse)
            let kept = try await credential.token
            #expect(kept.accessToken == before.accessToken, "the refused access token was not stored")
            #expect(kept.refreshToken != before.refreshToken, "the rotated refresh token was stored")
            let next = try await credential.refresh()
            #expect(next.refreshToken != kept.refreshToken, "the grant is alive: the kept token was the live one")
        }
    }

    @Test(
        "a queued global sign-out whose refresh answer is refused keeps the rotated refresh token in the entry: the next drain signs out"
    )
    func queuedGlobalSignOutKeepsRotatedToken() async throws {
        try await withHarness(.dev) { harness in
            let dev = try #require(harness.dev)
            try await Self.queueGlobalSignOut(harness)
            // The outbox's refresh is answered with a token_type it refuses, and a rotated
            // refresh token: the only live one now.
            dev.faults.set(DevProviderFault(replacedFields: ["token_type": "123"], remaining: 1), for: .token)
            let first = await harness.store.drainOutbox(DrainOptions(includeNotDue: true))
            #expect(first.failed == 1 && first.permanent == 0, "retried later, not given up: \(first)")
            #expect(await dev.liveGrants(of: "alice") == 1, "the grant is alive, its refresh token rotated")
            // The next drain refreshes with the kept token and signs out everywhere.
            let second = await harness.store.drainOutbox(DrainOptions(includeNotDue: true))
            let left = try await harness.store.outboxEntries().map { "\($0.action): \($0.lastError ?? "-")" }
            #expect(second.failed == 0 && second.permanent == 0, "\(second) \(left)")
            #expect(left.isEmpty)
            #expect(await dev.liveGrants(of: "alice") == 0)
        }
    }

    @Test(
        "a queued global sign-out that refreshed, then failed for good: the refresh token it rotated is revoked after it, not only the one queued"
    )
    func rotatedByQueuedGlobalSignOutIsRevoked() async throws {
        // A provider where revoking a rotated-out refresh token does nothing (RFC 7009 §2.2: it
        // is no longer a valid token), as at many: only the live one ends the grant.
        var configuration = DevProviderConfiguration.default
        configuration.revokesGrantOnRefreshReplay = false
        try await withHarness(.dev, devConfiguration: configuration) { harness in
            let dev = try #require(harness.dev)
            try await Self.queueGlobalSignOut(harness)
            // The drain refreshes (the refresh token rotates), then the provider refuses the
            // global sign-out for good: the revocations queued behind it go, with what they hold.
            let refusing = ForwardingProvider(harness.provider) { _ throws(ProviderError) in
                dev.faults.set(.status(400), for: .globalSignOut)
            }
            await harness.store.register(refusing)
            dev.faults.resetCounters()
            for _ in 0..<2 { _ = await harness.store.drainOutbox(DrainOptions(includeNotDue: true)) }
            #expect(dev.faults.count("token.refresh_token") == 1)
            #expect(dev.faults.count(.globalSignOut) == 2, "one with the dead access token, one after the refresh")
            let left = try await harness.store.outboxEntries()
            #expect(left.map(\.action) == [.globalSignOut] && left.allSatisfy(\.failedPermanently), "\(left)")
            #expect(await dev.liveGrants(of: "alice") == 0, "the live refresh token was revoked")
        }
    }
}

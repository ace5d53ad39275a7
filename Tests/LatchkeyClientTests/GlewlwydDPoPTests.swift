import Foundation
import HTTPTypes
import Latchkey
import LatchkeySQLite
import LatchkeyTestSupport
import Testing

/// DPoP (RFC 9449) against Glewlwyd 2.7.5, which `scripts/providers/glewlwyd` starts with DPoP
/// allowed and a nonce required in every proof, changing after every second accepted one (one
/// nonce per client, shared by every user and process of it).
@Suite("DPoP at Glewlwyd", .enabled(if: Glewlwyd.isEnabled))
struct GlewlwydDPoPTests {
    static func bound(_ configuration: inout OpenIDProviderConfiguration) { configuration.dpop = .required }

    @Test("a bound sign-in: the provider binds both tokens to the account's key; userinfo and refresh prove it")
    func binds() async throws {
        try await withHarness(.glewlwyd, tweak: Self.bound) { harness in
            let alice = try await DPoPTests.signIn(harness)
            let token = try await alice.token
            #expect(token.tokenType.lowercased() == "dpop")
            let binding = try #require(token.dpop)
            let access = try await harness.inspector.introspect(try #require(token.accessToken), kind: .accessToken)
            #expect(access.active)
            #expect(access.fields["cnf"] == .object(["jkt": .string(binding.thumbprint)]))
            for _ in 0..<3 { #expect(try await alice.userInfo()["preferred_username"] == .string("alice")) }
            let refreshed = try await alice.refresh()
            #expect(refreshed.dpop == binding)
            #expect(try await alice.userInfo()["preferred_username"] == .string("alice"))
        }
    }

    @Test("a stolen access token is refused as a bearer token, and a stolen refresh token cannot refresh")
    func stolenTokens() async throws {
        try await withHarness(.glewlwyd, tweak: Self.bound) { harness in
            let alice = try await DPoPTests.signIn(harness)
            let token = try await alice.token
            let accessToken = try #require(token.accessToken)
            await #expect(throws: ProviderError.self) { try await harness.provider.userInfo(accessToken: accessToken) }
            var stolen = try await DPoPTests.signIn(harness, "bob").token
            stolen.accessToken = accessToken
            // Glewlwyd 2.7.5's bug, pinned here so that a fix shows: its userinfo checks a proof's
            // signature, `ath` and nonce but not that its key is the token's `cnf.jkt`, so a
            // thief's own key passes (`callback_check_userinfo` verifies with no previous jkt).
            // The development provider refuses it (DPoPTests.stolenTokens).
            let claims = try await harness.provider.userInfo(for: stolen)
            #expect(claims["preferred_username"] == .string("alice"))
            stolen.refreshToken = token.refreshToken
            let refusal = await #expect(throws: ProviderError.self) {
                try await harness.provider.exchangeRefreshToken(of: stolen)
            }
            #expect(refusal?.oauthError == .invalidDPoPProof)
            stolen.dpop = nil
            await #expect(throws: ProviderError.self) { try await harness.provider.exchangeRefreshToken(of: stolen) }
            // Not spent: its holder refreshes.
            try await alice.refresh()
            #expect(try await alice.userInfo()["preferred_username"] == .string("alice"))
        }
    }

    /// Glewlwyd allows no `iat` after its own time (`oauth-dpop-iat-gap-duration` is 0 unless
    /// set) and reads that time with `time()`, glibc's coarse clock, which lags the clock a
    /// process reads by up to a tick: a proof made in a second's first milliseconds was refused
    /// as from the future, 0.4% of proofs on one machine. A client clock 0.9 s ahead makes that
    /// window nine tenths of every second.
    @Test("a client clock 0.9 s ahead of the provider's: every proof is accepted")
    func clockAhead() async throws {
        try await withHarness(.glewlwyd, clock: AheadClock(by: 0.9), tweak: Self.bound) { harness in
            let alice = try await DPoPTests.signIn(harness)
            for _ in 0..<5 { #expect(try await alice.userInfo()["preferred_username"] == .string("alice")) }
            try await alice.refresh()
            #expect(try await alice.userInfo()["preferred_username"] == .string("alice"))
        }
    }

    /// Glewlwyd's one nonce per client changes after it is used, so while eight processes call
    /// at once they spend each other's: a call's retries after a nonce challenge run under the
    /// credential's lease, each with the newest nonce, so that retriers do not collide with
    /// each other, and at most three retries follow the first refusal.
    @Test(
        "8 processes refresh and call userinfo at once with a nonce that changes as it is used: one refresh, every call succeeds, at most three retries each"
    )
    func processes() async throws {
        try await AsyncGate.glewlwyd.run {
            let environment = try Glewlwyd.require()
            let folder = try TemporaryFolder()
            defer { folder.cleanUp() }
            let path = folder.file("credentials.sqlite")
            let store = try await CredentialStore.sqlite(at: path)
            let provider = OpenIDProvider(
                configuration: OpenIDProviderConfiguration(
                    issuer: try #require(URL(string: environment.issuer)), clientID: environment.confidentialClientID,
                    authentication: .basic(secret: environment.clientSecret), allowsPasswordGrant: true, dpop: .required
                ),
                transport: transport)
            let alice = try await provider.signIn(.password(username: "alice", password: "alice-password"), into: store)
            // Every process finds the access token rejected: one of them refreshes, for all.
            try await alice.reject(accessToken: try await alice.accessToken())
            let worker = Executables.url("latchkey-store-worker")
            let arguments = [
                "dpop", path, environment.issuer, environment.confidentialClientID, environment.clientSecret,
                alice.id.rawValue, "5",
            ]
            let results = try await withThrowingTaskGroup { group in
                for _ in 0..<8 { group.addTask { try await ChildProcess.run(worker, arguments) } }
                return try await group.reduce(into: [ChildProcess.Result]()) { $0.append($1) }
            }
            var refreshes = 0
            var failed = 0
            for result in results {
                #expect(result.status == 0, "\(result.stderr)")
                let words = result.stdout.split(whereSeparator: \.isWhitespace).map(String.init)
                let number = { (name: String) in words.firstIndex(of: name).flatMap { Int(words[$0 + 1]) } }
                #expect(number("failed") == 0, "\(result.stdout) \(result.stderr)")
                #expect(try #require(number("most-challenges")) <= 1 + 3, "\(result.stdout)")
                refreshes += try #require(number("refreshes"), "\(result.stdout) \(result.stderr)")
                failed += try #require(number("failed"))
            }
            #expect(refreshes == 1)
            print("DPoP across 8 processes at Glewlwyd: \(failed) of 48 calls failed")
        }
    }
}

/// The system's time, with dates `seconds` ahead: a client whose clock runs ahead of the
/// provider's.
private struct AheadClock: LatchkeyClock {
    var seconds: TimeInterval

    init(by seconds: TimeInterval) { self.seconds = seconds }

    var now: ContinuousClock.Instant { ContinuousClock.now }
    var minimumResolution: Duration { ContinuousClock().minimumResolution }
    var date: Date { Date().addingTimeInterval(seconds) }

    func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration?) async throws {
        try await ContinuousClock().sleep(until: deadline, tolerance: tolerance)
    }
}

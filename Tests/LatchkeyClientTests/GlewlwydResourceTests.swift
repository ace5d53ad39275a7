import Foundation
import Latchkey
import LatchkeyHTTP
import LatchkeyTestSupport
import Testing

/// Resource indicators (RFC 8707) against Glewlwyd 2.7.5, which `scripts/providers/glewlwyd`
/// starts with `https://files.latchkey.test/` and `https://mail.latchkey.test/` allowed with the
/// `profile` scope, and the mail one with `email`.
@Suite("Resource tokens at Glewlwyd", .enabled(if: Glewlwyd.isEnabled))
struct GlewlwydResourceTests {
    /// Glewlwyd issues a resource's token only for the resources the user authorized in the
    /// browser (its password grant takes none), so these tests sign in there, asking for both.
    static func resources(_ configuration: inout OpenIDProviderConfiguration) {
        configuration.resources = [ResourceTokenTests.files, ResourceTokenTests.mail]
    }

    static func signIn(_ harness: Harness) async throws -> Credential {
        let listener = NIOLoopbackRedirectListener(port: 8765)
        return try await harness.provider.signIn(
            .browser(listener: listener, timeout: .seconds(20)) { url in
                Task { try await Browser.signIn(at: url, harness: harness) }
            },
            into: harness.store)
    }

    @Test("a resource's token has that audience; one it does not serve is refused with invalid_target")
    func audience() async throws {
        try await withHarness(.glewlwyd, tweak: Self.resources) { harness in
            let alice = try await Self.signIn(harness)
            let own = try await alice.accessToken()
            let files = try await alice.accessToken(for: ResourceTokenTests.files)
            let fields = try await harness.inspector.introspect(files, kind: .accessToken).fields
            #expect(fields["active"] == .bool(true))
            #expect(fields["aud"] == .string(ResourceTokenTests.files.absoluteString))
            #expect(try await alice.accessToken() == own)
            let elsewhere = try #require(URL(string: "https://elsewhere.latchkey.test/"))
            let error = await #expect(throws: ProviderError.self) { try await alice.accessToken(for: elsewhere) }
            #expect(error?.oauthError == .invalidTarget || error?.status == 403, "\(String(describing: error))")
        }
    }

    @Test("a sign-out leaves no resource's token active, though Glewlwyd's refresh-token revocation ends none of them")
    func signOut() async throws {
        try await withHarness(.glewlwyd, tweak: Self.resources) { harness in
            let alice = try await Self.signIn(harness)
            let own = try await alice.accessToken()
            let files = try await alice.accessToken(for: ResourceTokenTests.files)
            let mail = try await alice.accessToken(for: ResourceTokenTests.mail)
            let result = await harness.store.signOut(.account(alice.id))
            #expect(result.failures.isEmpty, "\(result)")
            for token in [own, files, mail] { #expect(try await harness.isActive(token) == false) }
        }
    }

    @Test("with DPoP, a resource's token is bound to the account's key")
    func bound() async throws {
        try await withHarness(
            .glewlwyd,
            tweak: {
                GlewlwydDPoPTests.bound(&$0)
                Self.resources(&$0)
            }
        ) { harness in
            let alice = try await Self.signIn(harness)
            let files = try await alice.resourceToken(for: ResourceTokenTests.files)
            #expect(files.tokenType.lowercased() == "dpop")
            let fields = try await harness.inspector.introspect(files.accessToken, kind: .accessToken).fields
            #expect(fields["aud"] == .string(ResourceTokenTests.files.absoluteString))
            #expect(fields["cnf"] == .object(["jkt": .string(try #require(try await alice.token.dpop?.thumbprint))]))
        }
    }
}

import Foundation
import JWTKit
import Latchkey
import Testing

/// Back-channel logout tokens that must be taken or refused, in both shapes in use, signed here
/// with the keys of the ID-token tests.
@Suite("Logout token verification")
struct LogoutTokenVerifierTests {
    typealias Keys = IDTokenVerifierTests.Keys
    typealias Claims = IDTokenVerifierTests.Claims
    static let issuer = IDTokenVerifierTests.issuer
    static let clientID = IDTokenVerifierTests.clientID
    let now = Date(timeIntervalSince1970: 1_900_000_000)

    /// Glewlwyd 2.7.5's shape (draft 06): no `exp`, no `typ`, `sub` always, `sid` when asked.
    func claims(_ changes: [String: JSONValue?] = [:]) -> [String: JSONValue] {
        var values: [String: JSONValue] = [
            "iss": .string(Self.issuer), "aud": .string(Self.clientID), "sub": .string("alice"),
            "sid": .string("session-1"), "iat": .number(now.timeIntervalSince1970 - 5), "jti": .string("jti-1"),
            "events": .object([LogoutTokenVerifier.event: .object([:])]),
        ]
        for (key, value) in changes { values[key] = value }
        return values
    }

    func verify(_ token: String, keys: Keys) async throws(LogoutTokenError) -> LogoutTokenClaims {
        let jwks = keys.jwks
        return try await LogoutTokenVerifier(issuer: Self.issuer, clientID: Self.clientID, leeway: 30).verify(
            token, now: now, keys: { _ in jwks })
    }

    @Test("Glewlwyd's shape (no exp, no typ) while its iat is recent, and the final shape with exp and typ")
    func accepted() async throws {
        let keys = try await Keys()
        let draft = try await verify(try await keys.keys.sign(Claims(claims()), kid: "ec-1"), keys: keys)
        #expect(draft.subject == "alice")
        #expect(draft.sessionID == "session-1")
        #expect(draft.id == "jti-1")
        let final = try await keys.keys.sign(
            Claims(claims(["sub": nil, "exp": .number(now.timeIntervalSince1970 + 120)])), kid: "ec-1",
            header: ["typ": "logout+jwt"])
        let verified = try await verify(final, keys: keys)
        #expect(verified.subject == nil)
        #expect(verified.sessionID == "session-1")
    }

    @Test(
        "each check refuses with its own reason",
        arguments: [
            (["iss": .string("https://other.example")], LogoutTokenError.Reason.issuerMismatch),
            (["aud": .string("someone-else")], .audienceMismatch),
            (["iat": .number(1_900_000_000 + 31)], .issuedInFuture),
            (["iat": nil], .issuedInFuture),
            (["exp": .number(1_900_000_000 - 31)], .expired),
            (["iat": .number(1_900_000_000 - 200)], .tooOld),
            (["events": nil], .missingEvent),
            (["events": .object(["http://schemas.openid.net/event/other": .object([:])])], .missingEvent),
            (["events": .object([LogoutTokenVerifier.event: .string("yes")])], .missingEvent),
            (["sub": nil, "sid": nil], .noSubjectOrSession),
            (["nonce": .string("n-1")], .containsNonce),
            (["jti": nil], .missingID),
        ] as [([String: JSONValue?], LogoutTokenError.Reason)])
    func refused(changes: [String: JSONValue?], reason: LogoutTokenError.Reason) async throws {
        let keys = try await Keys()
        let token = try await keys.keys.sign(Claims(claims(changes)), kid: "ec-1")
        await #expect(throws: LogoutTokenError(reason)) { _ = try await verify(token, keys: keys) }
    }

    @Test("a refusal names the kind of token and the check, never the token; both kinds share the checks' names")
    func refusalDescription() async throws {
        let keys = try await Keys()
        let token = try await keys.keys.sign(Claims(claims(["jti": nil])), kid: "ec-1")
        let error = try await #require(throws: LogoutTokenError.self) { _ = try await verify(token, keys: keys) }
        #expect(error.description == "The logout token was refused: missingID.")
        #expect(!"\(error)".contains(token))
        #expect(IDTokenError(.expired).description == "The ID token was refused: expired.")
        #expect(IDTokenError.Reason.expired == LogoutTokenError.Reason.expired)
    }

    @Test("an old token with a live exp is taken: exp, not iat, bounds a token that has one")
    func expBounds() async throws {
        let keys = try await Keys()
        let token = try await keys.keys.sign(
            Claims(
                claims([
                    "iat": .number(now.timeIntervalSince1970 - 600), "exp": .number(now.timeIntervalSince1970 + 60),
                ])),
            kid: "ec-1")
        _ = try await verify(token, keys: keys)
    }

    @Test("another type of token is refused; an ID token (a nonce, no event) cannot pass as one")
    func otherTokens() async throws {
        let keys = try await Keys()
        let accessToken = try await keys.keys.sign(Claims(claims()), kid: "ec-1", header: ["typ": "at+jwt"])
        await #expect(throws: LogoutTokenError(.wrongType)) { _ = try await verify(accessToken, keys: keys) }
        let idToken = try await keys.keys.sign(
            Claims(claims(["events": nil, "nonce": .string("n-1"), "exp": .number(now.timeIntervalSince1970 + 60)])),
            kid: "ec-1")
        await #expect(throws: LogoutTokenError.self) { _ = try await verify(idToken, keys: keys) }
        // The generic type some providers send (Keycloak's `JWT`) is untyped, not another type.
        let generic = try await keys.keys.sign(Claims(claims()), kid: "ec-1", header: ["typ": "JWT"])
        _ = try await verify(generic, keys: keys)
    }

    @Test("signatures: another key, an unknown kid, HMAC, none, garbage and a huge token are refused")
    func signatures() async throws {
        let keys = try await Keys()
        let impostor = try await keys.impostor.sign(Claims(claims()), kid: "ec-1")
        await #expect(throws: LogoutTokenError(.invalidSignature)) { _ = try await verify(impostor, keys: keys) }
        let stranger = try await keys.keys.sign(Claims(claims()), kid: "stranger")
        await #expect(throws: LogoutTokenError(.unknownKey)) { _ = try await verify(stranger, keys: keys) }
        let hmac = try await keys.keys.sign(Claims(claims()), kid: "hmac", header: ["kid": "ec-1"])
        await #expect(throws: LogoutTokenError(.algorithmNotAllowed)) { _ = try await verify(hmac, keys: keys) }
        await #expect(throws: LogoutTokenError(.malformed)) { _ = try await verify("not.a.token", keys: keys) }
        let huge = String(repeating: "a", count: IDTokenVerifier.maximumLength + 1)
        await #expect(throws: LogoutTokenError(.tooLarge)) { _ = try await verify(huge, keys: keys) }
        #expect(!"\(LogoutTokenError(.invalidSignature))".contains(impostor))
    }
}

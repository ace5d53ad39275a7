import Crypto
import Foundation
import JWTKit
import Latchkey
import NIOConcurrencyHelpers
import Testing

/// ID tokens that must be accepted or rejected, signed here with keys of the test's own.
@Suite("ID token verification", .serialized)
struct IDTokenVerifierTests {
    static let issuer = "https://issuer.example"
    static let clientID = "client-1"
    let now = Date(timeIntervalSince1970: 1_900_000_000)

    struct Claims: JWTPayload {
        var values: [String: JSONValue]
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(values)
        }
        init(_ values: [String: JSONValue]) { self.values = values }
        init(from decoder: any Decoder) throws {
            values = try decoder.singleValueContainer().decode([String: JSONValue].self)
        }
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// Keys and a JWKS that knows some of them.
    struct Keys {
        let other = ES256PrivateKey()
        let keys = JWTKeyCollection()
        /// Signs with another key under the known kid.
        let impostor = JWTKeyCollection()
        let ec = ES256PrivateKey()
        var jwks: JWKS

        init() async throws {
            let parameters = try #require(ec.publicKey.parameters)
            jwks = JWKS(keys: [
                JWK.ecdsa(.es256, identifier: "ec-1", x: parameters.x, y: parameters.y, curve: .p256)
            ])
            await keys.add(ecdsa: ec, kid: "ec-1")
            await keys.add(ecdsa: other, kid: "stranger")
            await impostor.add(ecdsa: other, kid: "ec-1")
            await keys.add(hmac: "a-secret-key-that-is-long-enough-for-hs256", digestAlgorithm: .sha256, kid: "hmac")
        }
    }

    func claims(_ changes: [String: JSONValue?] = [:]) -> [String: JSONValue] {
        var values: [String: JSONValue] = [
            "iss": .string(Self.issuer), "sub": .string("alice"), "aud": .string(Self.clientID),
            "exp": .number(now.timeIntervalSince1970 + 300), "iat": .number(now.timeIntervalSince1970 - 5),
            "nonce": .string("n-1"),
        ]
        for (key, value) in changes { values[key] = value }
        return values
    }

    func verify(
        _ token: String, keys: Keys, nonce: String? = "n-1", accessToken: String? = nil, fetches: Counter? = nil
    ) async throws(IDTokenError) -> IDTokenClaims {
        let jwks = keys.jwks
        return try await IDTokenVerifier(issuer: Self.issuer, clientID: Self.clientID, leeway: 30).verify(
            token, nonce: nonce, accessToken: accessToken, now: now,
            keys: { _ in
                fetches?.increment()
                return jwks
            })
    }

    @Test("a correct token is accepted")
    func accepted() async throws {
        let keys = try await Keys()
        let token = try await keys.keys.sign(Claims(claims()), kid: "ec-1")
        let verified = try await verify(token, keys: keys)
        #expect(verified.subject == "alice")
    }

    @Test(
        "claims that must be rejected",
        arguments: [
            (["iss": .string("https://other.example")], IDTokenError.Reason.issuerMismatch),
            (["aud": .string("someone-else")], .audienceMismatch),
            (["aud": .array([.string(clientID), .string("other")])], .authorizedPartyMismatch),
            (["azp": .string("other")], .authorizedPartyMismatch),
            (["nonce": .string("n-2")], .nonceMismatch),
            (["exp": .number(1_900_000_000 - 31)], .expired),
            (["iat": .number(1_900_000_000 + 31)], .issuedInFuture),
            (["nbf": .number(1_900_000_000 + 31)], .notYetValid),
            (["nbf": .string("soon")], .malformed),
        ] as [([String: JSONValue], IDTokenError.Reason)])
    func rejectedClaims(changes: [String: JSONValue], reason: IDTokenError.Reason) async throws {
        let keys = try await Keys()
        let token = try await keys.keys.sign(Claims(claims(changes)), kid: "ec-1")
        await #expect(throws: IDTokenError(reason)) { _ = try await verify(token, keys: keys) }
    }

    @Test("several audiences with the right azp, and exp within the leeway, are accepted")
    func acceptedEdges() async throws {
        let keys = try await Keys()
        let token = try await keys.keys.sign(
            Claims(
                claims([
                    "aud": .array([.string(Self.clientID), .string("api")]), "azp": .string(Self.clientID),
                    "exp": .number(now.timeIntervalSince1970 - 10),
                ])),
            kid: "ec-1")
        _ = try await verify(token, keys: keys)
    }

    @Test("alg none is rejected")
    func algNone() async throws {
        let keys = try await Keys()
        func segment(_ object: [String: JSONValue]) throws -> String {
            try JSONEncoder().encode(object).base64EncodedString().replacingOccurrences(of: "=", with: "")
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        }
        let token = "\(try segment(["alg": .string("none"), "kid": .string("ec-1")])).\(try segment(claims()))."
        await #expect(throws: IDTokenError(.algorithmNotAllowed)) { _ = try await verify(token, keys: keys) }
    }

    @Test("HS256 (an HMAC signed with anything, even the public key) is rejected")
    func hmac() async throws {
        let keys = try await Keys()
        let token = try await keys.keys.sign(Claims(claims()), kid: "hmac", header: ["kid": "ec-1"])
        #expect(token.split(separator: ".").count == 3)
        await #expect(throws: IDTokenError(.algorithmNotAllowed)) { _ = try await verify(token, keys: keys) }
    }

    @Test("a signature by another key with a known kid is rejected, the set fetched once more first")
    func wrongSignature() async throws {
        let keys = try await Keys()
        let token = try await keys.impostor.sign(Claims(claims()), kid: "ec-1")
        let fetches = Counter()
        await #expect(throws: IDTokenError(.invalidSignature)) {
            _ = try await verify(token, keys: keys, fetches: fetches)
        }
        #expect(fetches.value == 2)
    }

    @Test(
        "a signature that fails under a known kid fetches the JWKS once more: a key replaced under the same kid is taken"
    )
    func replacedKey() async throws {
        let keys = try await Keys()
        // The provider now signs with another key under the same kid; the kept set has the old one.
        let token = try await keys.impostor.sign(Claims(claims()), kid: "ec-1")
        let replacement = try #require(keys.other.publicKey.parameters)
        let fresh = JWKS(keys: [
            JWK.ecdsa(.es256, identifier: "ec-1", x: replacement.x, y: replacement.y, curve: .p256)
        ])
        let kept = keys.jwks
        let refetches = Counter()
        let verified = try await IDTokenVerifier(issuer: Self.issuer, clientID: Self.clientID, leeway: 30).verify(
            token, nonce: "n-1", now: now,
            keys: { refetch in
                guard refetch else { return kept }
                refetches.increment()
                return fresh
            })
        #expect(verified.subject == "alice")
        #expect(refetches.value == 1)
    }

    @Test("an unknown kid fetches the JWKS once more, then is rejected")
    func unknownKid() async throws {
        let keys = try await Keys()
        let token = try await keys.keys.sign(Claims(claims()), kid: "stranger")
        let fetches = Counter()
        await #expect(throws: IDTokenError(.unknownKey)) { _ = try await verify(token, keys: keys, fetches: fetches) }
        #expect(fetches.value == 2)
    }

    @Test("a key set entry carrying private RSA parameters that cannot be a key is refused, not a crash")
    func hostileKeyWithPrivateParameters() async throws {
        let keys = try await Keys()
        // An even modulus (4) with a private exponent: building a private key from it traps in
        // swift-crypto (found by the fuzzer). A key set holds public keys; the private parts of
        // a key are never read.
        var jwks = keys.jwks
        jwks.keys.append(JWK.rsa(.rs256, identifier: "rsa-1", modulus: "BA", exponent: "AQAB", privateExponent: "AQ"))
        var hostile = keys
        hostile.jwks = jwks
        let header = #"{"alg":"RS256","kid":"rsa-1"}"#
        func segment(_ text: String) -> String {
            Data(text.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        }
        let token = "\(segment(header)).\(segment(#"{"sub":"alice"}"#)).c2ln"
        await #expect(throws: IDTokenError.self) { _ = try await verify(token, keys: hostile) }
    }

    @Test("an oversized or malformed token is rejected without parsing")
    func oversized() async throws {
        let keys = try await Keys()
        let big = String(repeating: "a", count: IDTokenVerifier.maximumLength + 1)
        await #expect(throws: IDTokenError(.tooLarge)) { _ = try await verify(big, keys: keys) }
        await #expect(throws: IDTokenError(.malformed)) { _ = try await verify("a.b", keys: keys) }
    }

    @Test("at_hash must match the access token when present")
    func atHash() async throws {
        let keys = try await Keys()
        let digest = Data(SHA256.hash(data: Data("access-1".utf8))).prefix(16)
        let hash = digest.base64EncodedString().replacingOccurrences(of: "=", with: "")
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        let token = try await keys.keys.sign(Claims(claims(["at_hash": .string(hash)])), kid: "ec-1")
        _ = try await verify(token, keys: keys, accessToken: "access-1")
        await #expect(throws: IDTokenError(.accessTokenHashMismatch)) {
            _ = try await verify(token, keys: keys, accessToken: "access-2")
        }
    }
}

/// A count shared with a `@Sendable` closure.
final class Counter: Sendable {
    private let count = NIOLockedValueBox(0)
    var value: Int { count.withLockedValue { $0 } }
    func increment() { count.withLockedValue { $0 += 1 } }
}

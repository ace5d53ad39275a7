import Crypto
import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// The development provider's DPoP (RFC 9449), driven with proofs this file signs itself: every
/// check refuses what it must, bound tokens carry `cnf.jkt`, and nonces rotate.
@Suite("Dev provider: DPoP")
struct DPoPEndpointTests {
    /// A key and the proofs it signs, written here apart from the client's and the provider's.
    struct Prover {
        var key = P256.Signing.PrivateKey()
        let clock: TestClock

        static func base64URL(_ data: some DataProtocol) -> String {
            Data(data).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }

        var jwk: [String: String] {
            let point = key.publicKey.rawRepresentation
            return [
                "kty": "EC", "crv": "P-256", "x": Self.base64URL(point.prefix(32)),
                "y": Self.base64URL(point.suffix(32)),
            ]
        }

        var thumbprint: String {
            let canonical = #"{"crv":"P-256","kty":"EC","x":"\#(jwk["x"]!)","y":"\#(jwk["y"]!)"}"#
            return Self.base64URL(Data(SHA256.hash(data: Data(canonical.utf8))))
        }

        func proof(
            _ method: String, _ url: String, accessToken: String? = nil, nonce: String? = nil,
            jti: String = UUID().uuidString,
            age: TimeInterval = 0, typ: String = "dpop+jwt", jwk: [String: String]? = nil,
            signer: P256.Signing.PrivateKey? = nil
        ) throws -> String {
            var claims: [String: Any] = [
                "htm": method, "htu": url, "jti": jti, "iat": Int(clock.date.timeIntervalSince1970 - age),
            ]
            if let accessToken { claims["ath"] = Self.base64URL(Data(SHA256.hash(data: Data(accessToken.utf8)))) }
            if let nonce { claims["nonce"] = nonce }
            let header: [String: Any] = ["typ": typ, "alg": "ES256", "jwk": jwk ?? self.jwk]
            let input =
                Self.base64URL(try JSONSerialization.data(withJSONObject: header)) + "."
                + Self.base64URL(try JSONSerialization.data(withJSONObject: claims))
            let signature = try (signer ?? key).signature(for: Data(input.utf8)).rawRepresentation
            return input + "." + Self.base64URL(signature)
        }
    }

    static func password(_ client: Client, proof: String?) async throws -> Answer {
        try await client.post(
            .token,
            [
                ("grant_type", "password"), ("username", "alice"), ("password", "alice-password"),
                ("scope", "openid profile offline_access"), ("client_id", Client.publicID),
            ], headers: proof.map { [("DPoP", $0)] } ?? [])
    }

    @Test("a proof binds the tokens: token_type DPoP and cnf.jkt in the access token")
    func binds() async throws {
        let clock = TestClock()
        try await withProvider(clock: clock) { client in
            let prover = Prover(clock: clock)
            let answer = try await Self.password(client, proof: try prover.proof("POST", client.url(.token)))
            #expect(answer.status == 200, "\(answer.text)")
            #expect(answer["token_type"] == "DPoP")
            let access = try #require(answer["access_token"])
            #expect((jwtParts(access).claims["cnf"] as? [String: String])?["jkt"] == prover.thumbprint)
            #expect(await client.provider.isActive(access))
        }
    }

    @Test("wrong htu, htm, iat, typ, key or signature, a private jwk, and a replayed jti are refused")
    func checks() async throws {
        let clock = TestClock()
        try await withProvider(clock: clock) { client in
            let prover = Prover(clock: clock)
            let token = client.url(.token)
            var privateJWK = prover.jwk
            privateJWK["d"] = Prover.base64URL(prover.key.rawRepresentation)
            let bad: [(String, String)] = [
                ("htu", try prover.proof("POST", token + "/other")),
                ("htm", try prover.proof("GET", token)),
                ("iat", try prover.proof("POST", token, age: 3_600)),
                ("typ", try prover.proof("POST", token, typ: "JWT")),
                ("signature", try prover.proof("POST", token, signer: P256.Signing.PrivateKey())),
                ("private jwk", try prover.proof("POST", token, jwk: privateJWK)),
                ("not a JWS", "not.a.proof"),
            ]
            for (what, proof) in bad {
                let answer = try await Self.password(client, proof: proof)
                #expect(answer.status == 400, "\(what)")
                #expect(answer["error"] == "invalid_dpop_proof", "\(what): \(answer.text)")
            }
            let once = try prover.proof("POST", token)
            #expect(try await Self.password(client, proof: once).status == 200)
            let replayed = try await Self.password(client, proof: once)
            #expect(replayed["error"] == "invalid_dpop_proof")
            #expect(replayed["error_description"]?.contains("jti") == true)
            #expect(client.provider.faults.count("dpop.refused") == bad.count + 1)
        }
    }

    @Test("a bound refresh token goes only with a proof of its key, and a refused one is not spent")
    func boundRefresh() async throws {
        let clock = TestClock()
        try await withProvider(clock: clock) { client in
            let prover = Prover(clock: clock)
            let signIn = try await Self.password(client, proof: try prover.proof("POST", client.url(.token)))
            let refreshToken = try #require(signIn["refresh_token"])
            let form = [
                ("grant_type", "refresh_token"), ("refresh_token", refreshToken), ("client_id", Client.publicID),
            ]
            let bare = try await client.post(.token, form)
            #expect(bare["error"] == "invalid_dpop_proof")
            let thief = Prover(clock: clock)
            let other = try await client.post(
                .token, form, headers: [("DPoP", try thief.proof("POST", client.url(.token)))])
            #expect(other["error"] == "invalid_dpop_proof")
            let owner = try await client.post(
                .token, form, headers: [("DPoP", try prover.proof("POST", client.url(.token)))])
            #expect(owner.status == 200, "\(owner.text)")
            #expect(owner["token_type"] == "DPoP")
        }
    }

    @Test("userinfo takes a bound token only as DPoP, with a proof of its key and its ath")
    func userinfo() async throws {
        let clock = TestClock()
        try await withProvider(clock: clock) { client in
            let prover = Prover(clock: clock)
            let signIn = try await Self.password(client, proof: try prover.proof("POST", client.url(.token)))
            let access = try #require(signIn["access_token"])
            let url = client.url(.userinfo)
            let bearer = try await client.get(url, headers: [("Authorization", "Bearer \(access)")])
            #expect(bearer.status == 401)
            let noProof = try await client.get(url, headers: [("Authorization", "DPoP \(access)")])
            #expect(noProof.status == 401)
            let wrongATH = try await client.get(
                url,
                headers: [
                    ("Authorization", "DPoP \(access)"), ("DPoP", try prover.proof("GET", url, accessToken: "x")),
                ])
            #expect(wrongATH.status == 401)
            #expect(wrongATH.header("WWW-Authenticate")?.contains(#"error="invalid_dpop_proof""#) == true)
            let thief = try await client.get(
                url,
                headers: [
                    ("Authorization", "DPoP \(access)"),
                    ("DPoP", try Prover(clock: clock).proof("GET", url, accessToken: access)),
                ])
            #expect(thief.status == 401)
            let good = try await client.get(
                url,
                headers: [
                    ("Authorization", "DPoP \(access)"), ("DPoP", try prover.proof("GET", url, accessToken: access)),
                ])
            #expect(good.status == 200, "\(good.text)")
            #expect(good["preferred_username"] == "alice")
        }
    }

    @Test("required nonces: a proof without the current one is answered with it; it changes after N uses")
    func nonces() async throws {
        let clock = TestClock()
        try await withProvider(clock: clock) { client in
            await client.provider.requireDPoPNonces(rotatingAfter: 2)
            let prover = Prover(clock: clock)
            let token = client.url(.token)
            let challenge = try await Self.password(client, proof: try prover.proof("POST", token))
            #expect(challenge.status == 400)
            #expect(challenge["error"] == "use_dpop_nonce")
            let nonce = try #require(challenge.header("DPoP-Nonce"))
            let first = try await Self.password(client, proof: try prover.proof("POST", token, nonce: nonce))
            #expect(first.status == 200)
            #expect(first.header("DPoP-Nonce") == nonce)
            let second = try await Self.password(client, proof: try prover.proof("POST", token, nonce: nonce))
            #expect(second.status == 200)
            let next = try #require(second.header("DPoP-Nonce"))
            #expect(next != nonce)
            let stale = try await Self.password(client, proof: try prover.proof("POST", token, nonce: nonce))
            #expect(stale["error"] == "use_dpop_nonce")
            #expect(stale.header("DPoP-Nonce") == next)
        }
    }
}

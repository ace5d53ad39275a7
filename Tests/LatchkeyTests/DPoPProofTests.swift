import Crypto
import Foundation
import JWTKit
import Latchkey
import Testing

/// DPoP proofs (RFC 9449 §4.2) as pure values: signed with the account's key, checked here by
/// jwt-kit's verifier (another implementation) and against the RFC's own `ath` example.
@Suite("DPoP proofs")
struct DPoPProofTests {
    private struct ProofClaims: JWTPayload {
        var jti: String
        var htm: String
        var htu: String
        var iat: Int
        var ath: String?
        var nonce: String?
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    private struct Header: Decodable {
        var typ: String
        var alg: String
        var jwk: [String: String]
    }

    private func part(_ proof: String, _ index: Int) throws -> Data {
        let piece = try #require(proof.split(separator: ".").dropFirst(index).first)
        var base64 = piece.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return try #require(Data(base64Encoded: base64))
    }

    @Test(
        "a proof carries htm, htu without query or fragment, iat a second back, jti, ath and nonce, and verifies with its own jwk"
    )
    func signedProof() async throws {
        let key = DPoPKey()
        // RFC 9449 §7.1's example: this access token's `ath`.
        let proof = try DPoPProof(
            method: "GET", url: try #require(URL(string: "https://resource.example.org/protectedresource?x=1#f")),
            issuedAt: Date(timeIntervalSince1970: 1_562_262_618),
            accessToken: "Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU",
            nonce: "eyJ7S_zG.eyJH0-Z.HX4w-7v", id: "e1j3V_bKic8-LAEB"
        ).signed(with: key)

        let header = try JSONDecoder().decode(Header.self, from: try part(proof, 0))
        #expect(header.typ == "dpop+jwt")
        #expect(header.alg == "ES256")
        #expect(header.jwk == key.publicJWK)
        #expect(Set(header.jwk.keys) == ["kty", "crv", "x", "y"], "the public half only")

        let keys = JWTKeyCollection()
        let x = try #require(header.jwk["x"])
        let y = try #require(header.jwk["y"])
        await keys.add(ecdsa: try ES256PublicKey(parameters: (x: x, y: y)))
        let claims = try await keys.verify(proof, as: ProofClaims.self)
        #expect(claims.htm == "GET")
        #expect(claims.htu == "https://resource.example.org/protectedresource")
        #expect(claims.iat == 1_562_262_617, "a second before the proof is made")
        #expect(claims.jti == "e1j3V_bKic8-LAEB")
        #expect(claims.ath == "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo")
        #expect(claims.nonce == "eyJ7S_zG.eyJH0-Z.HX4w-7v")
    }

    @Test(
        "htu is normalized as a server compares it (RFC 9449 §4.3): scheme and host lower case, default port dropped, path as sent",
        arguments: [
            ("HTTPS://API.Example.COM:443/a%2Fb/../c?q=1#frag", "https://api.example.com/a%2Fb/../c"),
            ("https://api.example.com:8443/Path", "https://api.example.com:8443/Path"),
            ("http://127.0.0.1:80/x", "http://127.0.0.1/x"),
            ("http://127.0.0.1:8080/x", "http://127.0.0.1:8080/x"),
            ("https://user:secret@api.example.com", "https://api.example.com/"),
            ("https://[::1]:443/v1", "https://[::1]/v1"),
        ])
    func normalizedTarget(_ given: String, _ expected: String) throws {
        let proof = DPoPProof(method: "GET", url: try #require(URL(string: given)), issuedAt: Date())
        #expect(proof.targetURI == expected)
    }

    @Test("at the token endpoint a proof has no ath and no nonce until one is asked for; every proof has its own jti")
    func tokenEndpointProof() async throws {
        let key = DPoPKey()
        let url = try #require(URL(string: "https://server.example.com/token"))
        let first = DPoPProof(method: "POST", url: url, issuedAt: Date())
        let second = DPoPProof(method: "POST", url: url, issuedAt: Date())
        #expect(first.id != second.id)
        let claims = try JSONSerialization.jsonObject(with: try part(try first.signed(with: key), 1)) as? [String: Any]
        #expect(claims?["ath"] == nil)
        #expect(claims?["nonce"] == nil)
        #expect(claims?["htu"] as? String == "https://server.example.com/token")
    }

    @Test(
        "the thumbprint is RFC 7638's over the public members; the private half survives sealing; no description shows it"
    )
    func keyHandling() throws {
        let key = DPoPKey()
        let jwk = key.publicJWK
        let canonical = try JSONSerialization.data(
            withJSONObject: ["crv": jwk["crv"], "kty": jwk["kty"], "x": jwk["x"], "y": jwk["y"]],
            options: [.sortedKeys])
        let expected = Data(SHA256.hash(data: canonical)).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        #expect(key.thumbprint == expected)
        #expect(key.thumbprint != DPoPKey().thumbprint)

        let reopened = try #require(DPoPKey(rawRepresentation: key.rawRepresentation))
        #expect(reopened.thumbprint == key.thumbprint)
        #expect(DPoPKey(rawRepresentation: Data([1, 2, 3])) == nil)

        var dumped = ""
        dump(key, to: &dumped)
        let shown = "\(key) \(String(reflecting: key)) \(dumped)"
        #expect(shown.contains(key.thumbprint))
        #expect(!shown.contains(key.rawRepresentation.base64EncodedString()))
    }

    @Test("what a server chose (a nonce) and a URL are written as JSON strings that read back the same")
    func escaping() throws {
        let nonce = "a\"b\\c\u{1}d\n/é"
        let url = try #require(URL(string: "https://api.example/a%22b/c"))
        let proof = DPoPProof(method: "GET", url: url, issuedAt: Date(timeIntervalSince1970: 7), nonce: nonce, id: "j")
        let claims = try #require(
            try JSONSerialization.jsonObject(with: Data(proof.claimsJSON.utf8)) as? [String: Any])
        #expect(claims["nonce"] as? String == nonce)
        #expect(claims["htu"] as? String == "https://api.example/a%22b/c")
        #expect(claims["iat"] as? Int == 6)
        #expect(claims["jti"] as? String == "j")
    }
}

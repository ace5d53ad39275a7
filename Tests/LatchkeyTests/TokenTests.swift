import Foundation
import Latchkey
import Testing

@Suite("Token model")
struct TokenTests {
    let issuedAt = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("decodes an RFC 6749 token response with expires_in as a number")
    func decodesNumericExpiry() throws {
        let body = """
            {"access_token":"AT-1","token_type":"Bearer","expires_in":3600,"refresh_token":"RT-1",
             "scope":"openid profile","id_token":"a.b.c","device_secret":"DS-1"}
            """
        let response = try TokenResponse(decoding: Data(body.utf8))
        let token = Token(response: response, issuedAt: issuedAt, provider: Fixtures.provider)
        #expect(token.accessToken == "AT-1")
        #expect(token.refreshToken == "RT-1")
        #expect(token.idToken == "a.b.c")
        #expect(token.deviceSecret == "DS-1")
        #expect(token.scopes == ["openid", "profile"])
        #expect(token.expiresAt == issuedAt.addingTimeInterval(3600))
        #expect(token.kinds == [.accessToken, .refreshToken, .idToken, .deviceSecret])
    }

    @Test("decodes expires_in sent as a string, and keeps unknown fields")
    func decodesStringExpiryAndKeepsUnknownFields() throws {
        let body =
            #"{"access_token":"AT","token_type":"bearer","expires_in":"120","session_state":"xyz","ext":{"a":[1,true,null]}}"#
        let response = try TokenResponse(decoding: Data(body.utf8))
        #expect(response.expiresIn == 120)
        #expect(response.additionalFields["session_state"] == .string("xyz"))
        #expect(response.additionalFields["ext"] == .object(["a": .array([.number(1), .bool(true), .null])]))
        let token = Token(response: response, issuedAt: issuedAt, provider: Fixtures.provider)
        #expect(token.additionalFields.keys.sorted() == ["ext", "session_state"])
        #expect(token.expires(within: 121, at: issuedAt))
        #expect(!token.isExpired(at: issuedAt.addingTimeInterval(119)))
        #expect(token.isExpired(at: issuedAt.addingTimeInterval(120)))
    }

    @Test(
        "rejects malformed token responses with a typed error",
        arguments: [
            (#"not json"#, TokenResponseError.notJSONObject),
            (#"[1,2]"#, .notJSONObject),
            (#"{"token_type":"Bearer"}"#, .missingField("access_token")),
            (#"{"access_token":"","token_type":"Bearer"}"#, .missingField("access_token")),
            (#"{"access_token":"AT"}"#, .missingField("token_type")),
            (#"{"access_token":7,"token_type":"Bearer"}"#, .invalidField("access_token")),
        ])
    func rejectsMalformedResponses(body: String, expected: TokenResponseError) {
        #expect(throws: expected) { try TokenResponse(decoding: Data(body.utf8)) }
    }

    @Test(
        "an access token outside RFC 6750's b64token is refused, naming the field and never the token",
        arguments: [
            #""SECRET\r\nX-Injected: 1""#, #""SECRET\u001b]0;title\u0007""#, #""SECRET\u0000""#, #""two words""#,
            #""caf\u00e9""#, #""=SECRET""#, #""SEC=RET""#, #""SECRET\t""#, #""SECRET,more""#, #""\"SECRET\"""#,
            #""===""#,
        ])
    func refusesNonB64Tokens(json: String) throws {
        let body = #"{"access_token":"# + json + #","token_type":"Bearer","refresh_token":"RT"}"#
        let error = #expect(throws: TokenResponseError.notB64Token("access_token")) {
            try TokenResponse(decoding: Data(body.utf8))
        }
        #expect(error?.description.contains("SECRET") == false)
    }

    @Test(
        "every b64token character, and trailing padding, is an access token",
        arguments: ["AT", "eyJ.eyJ.sig", "a-b.c_d~e+f/g", "AT=", "AT==", "0123456789"])
    func acceptsB64Tokens(token: String) throws {
        let body = #"{"access_token":""# + token + #"","token_type":"Bearer"}"#
        #expect(try TokenResponse(decoding: Data(body.utf8)).accessToken == token)
    }

    @Test(
        "an optional field that cannot be read is taken as absent and named; the tokens the answer carries stay",
        arguments: [
            (#""expires_in":"3600s""#, "expires_in"), (#""expires_in":-1"#, "expires_in"),
            (#""id_token":42"#, "id_token"), (#""scope":["openid",7]"#, "scope"),
            (#""device_secret":{}"#, "device_secret"),
        ])
    func oddOptionalFields(field: String, name: String) throws {
        let body = #"{"access_token":"AT","token_type":"Bearer","refresh_token":"RT-2","#
        let response = try TokenResponse(decoding: Data((body + field + "}").utf8))
        #expect(response.accessToken == "AT")
        #expect(response.refreshToken == "RT-2")
        #expect(response.ignoredFields == [name])
    }

    @Test("a scope sent as an array of strings is joined")
    func scopeArray() throws {
        let response = try TokenResponse(
            decoding: Data(#"{"access_token":"AT","token_type":"Bearer","scope":["openid","profile"]}"#.utf8))
        #expect(response.scope == "openid profile")
        #expect(response.ignoredFields.isEmpty)
    }

    @Test("a token without expires_in never expires locally")
    func noExpiry() throws {
        let response = try TokenResponse(decoding: Data(#"{"access_token":"AT","token_type":"Bearer"}"#.utf8))
        let token = Token(response: response, issuedAt: issuedAt, provider: Fixtures.provider)
        #expect(token.expiresAt == nil)
        #expect(!token.isExpired(at: .distantFuture))
    }

    @Test("description, debugDescription and dump never show a token value")
    func redaction() throws {
        let token = Fixtures.token(user: "alice", deviceSecret: true)
        var dumped = ""
        dump(token, to: &dumped)
        let response = try TokenResponse(
            decoding: Data(
                #"{"access_token":"SECRET-A","token_type":"Bearer","refresh_token":"SECRET-R","id_token":"SECRET-I","session_token":"SECRET-S"}"#
                    .utf8))
        var dumpedResponse = ""
        dump(response, to: &dumpedResponse)
        let texts = [
            token.description, token.debugDescription, String(describing: token), String(reflecting: token), dumped,
            "\(token)", response.description, response.debugDescription, dumpedResponse,
            String(describing: JSONValue.string("SECRET-S")), String(reflecting: response.additionalFields),
        ]
        let secrets = [token.accessToken, token.refreshToken, token.idToken, token.deviceSecret].compactMap { $0 }
        for text in texts {
            for secret in secrets + ["SECRET-"] {
                #expect(!text.contains(secret), "\(text.prefix(80)) shows a token")
            }
        }
        #expect(token.description.contains("refresh_token"))
    }

    @Test("a token survives encoding and decoding unchanged")
    func codableRoundTrip() throws {
        var token = Fixtures.token(user: "alice", deviceSecret: true)
        token.additionalFields = ["x": .number(1.5)]
        let decoded = try JSONDecoder().decode(Token.self, from: JSONEncoder().encode(token))
        #expect(decoded == token)
    }
}

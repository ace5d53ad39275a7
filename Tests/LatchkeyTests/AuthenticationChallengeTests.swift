import Foundation
import HTTPTypes
import Latchkey
import Testing

@Suite("WWW-Authenticate")
struct AuthenticationChallengeTests {
    @Test("challenges, parameters, quoted strings with escapes and token68 are read as RFC 9110 writes them")
    func parsing() {
        let challenges = AuthenticationChallenge.parse(
            #"Bearer realm="api, v2", error="invalid_token", error_description="the \"token\" expired", DPoP algs="ES256 RS256", Basic abc+/=="#
        )
        #expect(challenges.map(\.scheme) == ["bearer", "dpop", "basic"])
        #expect(challenges.first?.parameters["realm"] == "api, v2")
        #expect(challenges.first?.error == .invalidToken)
        #expect(challenges.first?.parameters["error_description"] == #"the "token" expired"#)
        #expect(challenges[1].parameters["algs"] == "ES256 RS256")
        #expect(challenges[2].parameters["token68"] == "abc+/==")
        #expect(AuthenticationChallenge.parse("Bearer error=invalid_token").first?.error == .invalidToken)
        #expect(AuthenticationChallenge.parse("").isEmpty)
        // token68 is the access tokens' own syntax: tchar's other marks are not in it.
        for text in ["abc#def", "a*b", "a|b", "a'b", "a%b", "a^b", "a`b", "a$b", "a&b", "a!b"] {
            #expect(AuthenticationChallenge.parse("Basic \(text)").first?.parameters["token68"] == nil, "\(text)")
        }
        #expect(AuthenticationChallenge.parse("Basic a-b._~+/9==").first?.parameters["token68"] == "a-b._~+/9==")
        #expect(AuthenticationChallenge.parse(#"Bearer error="unterminated"#).first?.error?.rawValue == "unterminated")
    }

    @Test("what an answer means: a nonce to try, a rejected token (401 with invalid_token or no error), or final")
    func meaning() throws {
        func response(_ status: HTTPResponse.Status, _ challenge: String?, nonce: String? = nil) -> HTTPResponse {
            var fields = HTTPFields()
            if let challenge { fields[.wwwAuthenticate] = challenge }
            if let nonce, let name = HTTPField.Name("DPoP-Nonce") { fields[name] = nonce }
            return HTTPResponse(status: status, headerFields: fields)
        }
        #expect(ResourceAnswer.of(response(.unauthorized, #"Bearer error="invalid_token""#)) == .tokenRejected)
        #expect(ResourceAnswer.of(response(.unauthorized, #"Bearer realm="api""#)) == .tokenRejected)
        #expect(ResourceAnswer.of(response(.unauthorized, nil)) == .tokenRejected)
        #expect(ResourceAnswer.of(response(.unauthorized, #"DPoP error="invalid_token""#)) == .tokenRejected)
        #expect(ResourceAnswer.of(response(.unauthorized, #"Bearer error="insufficient_scope""#)) == .final)
        #expect(ResourceAnswer.of(response(.forbidden, #"Bearer error="invalid_token""#)) == .final)
        #expect(ResourceAnswer.of(response(.ok, nil)) == .final)
        // RFC 9449 §9: a nonce refusal is retried only with a nonce to try, and only for DPoP.
        let nonce = response(.unauthorized, #"DPoP error="use_dpop_nonce", algs="ES256""#, nonce: "n-2")
        #expect(ResourceAnswer.of(nonce) == .nonceRequired("n-2"))
        #expect(ResourceAnswer.of(response(.unauthorized, #"DPoP error="use_dpop_nonce""#)) == .final)
        #expect(
            ResourceAnswer.of(response(.unauthorized, #"Bearer error="use_dpop_nonce""#, nonce: "n")) == .final)
        // A token endpoint's refusal (RFC 9449 §8) is in its body.
        let body = Data(#"{"error":"use_dpop_nonce"}"#.utf8)
        #expect(ResourceAnswer.of(response(.badRequest, nil, nonce: "n-3"), body: body) == .nonceRequired("n-3"))
        #expect(ResourceAnswer.of(response(.badRequest, nil, nonce: "n-3"), body: Data("{}".utf8)) == .final)
        #expect(ResourceAnswer.of(response(.badRequest, nil), body: body) == .final)
    }
}

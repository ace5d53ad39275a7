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
        #expect(AuthenticationChallenge.parse(#"Bearer error="unterminated"#).first?.error?.rawValue == "unterminated")
    }

    @Test("a rejected token: a 401 with invalid_token or no error; never another error or another status")
    func rejection() {
        func response(_ status: HTTPResponse.Status, _ challenge: String?) -> HTTPResponse {
            var fields = HTTPFields()
            if let challenge { fields[.wwwAuthenticate] = challenge }
            return HTTPResponse(status: status, headerFields: fields)
        }
        #expect(AuthenticationChallenge.rejectsToken(response(.unauthorized, #"Bearer error="invalid_token""#)))
        #expect(AuthenticationChallenge.rejectsToken(response(.unauthorized, #"Bearer realm="api""#)))
        #expect(AuthenticationChallenge.rejectsToken(response(.unauthorized, nil)))
        #expect(AuthenticationChallenge.rejectsToken(response(.unauthorized, #"DPoP error="invalid_token""#)))
        #expect(!AuthenticationChallenge.rejectsToken(response(.unauthorized, #"Bearer error="insufficient_scope""#)))
        #expect(!AuthenticationChallenge.rejectsToken(response(.forbidden, #"Bearer error="invalid_token""#)))
        #expect(!AuthenticationChallenge.rejectsToken(response(.ok, nil)))
    }
}

import Foundation
import Latchkey
import Testing

/// Numbers a provider sends never trap and never travel on as nonsense.
@Suite("Provider numbers")
struct ProviderNumberTests {
    @Test("lifetimes and intervals saturate: huge, negative, not a number")
    func saturate() {
        #expect(ProviderNumbers.seconds(1e308, fallback: 5) == ProviderNumbers.longest)
        #expect(ProviderNumbers.seconds(-3, fallback: 5) == 0)
        #expect(ProviderNumbers.seconds(.nan, fallback: 5) == 5)
        #expect(ProviderNumbers.seconds(nil, fallback: 5) == 5)
        #expect(ProviderNumbers.integer(Double(Int.max), fallback: 5, in: 1...3_600) == 3_600)
        #expect(ProviderNumbers.integer(9.3e18, fallback: 5, in: 1...3_600) == 3_600)
        #expect(ProviderNumbers.integer(-1e300, fallback: 5, in: 1...3_600) == 1)
        #expect(ProviderNumbers.integer(.infinity, fallback: 5, in: 1...3_600) == 3_600)
        #expect(ProviderNumbers.integer(.nan, fallback: 5, in: 1...3_600) == 5)
    }

    @Test("Retry-After of any size, or nonsense, never traps")
    func retryAfter() {
        #expect(OpenIDProvider.retryAfter("120") == .seconds(120))
        #expect(OpenIDProvider.retryAfter("99999999999999999999999999") == .seconds(ProviderNumbers.longest))
        #expect(OpenIDProvider.retryAfter("-5") == nil)
        #expect(OpenIDProvider.retryAfter("1e400") == nil)
        #expect(OpenIDProvider.retryAfter("Wed, 21 Oct 2015 07:28:00 GMT") == .seconds(0))
    }

    @Test("a token response with an absurd expires_in gives a token that expires in a century at most")
    func absurdExpiry() throws {
        let response = try TokenResponse(
            decoding: Data(#"{"access_token":"a","token_type":"Bearer","expires_in":1e308}"#.utf8))
        let issued = Date(timeIntervalSince1970: 1_800_000_000)
        let token = Token(
            response: response, issuedAt: issued, provider: ProviderIdentity(issuer: "https://i.example", clientID: "c")
        )
        #expect(token.expiresAt == issued.addingTimeInterval(ProviderNumbers.longest))
        #expect(!token.description.isEmpty)
    }
}

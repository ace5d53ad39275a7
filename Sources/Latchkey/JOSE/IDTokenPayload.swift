import Foundation
import JWTKit

/// An ID token's payload as jwt-kit's parser decodes it: the registered claims in jwt-kit's
/// types, and every claim as it came. Decoding checks nothing: ``IDTokenVerifier`` checks the
/// claims itself, with its own clock and leeway.
struct IDTokenPayload: JWTPayload {
    var issuer: IssuerClaim?
    var subject: SubjectClaim?
    var audience: AudienceClaim?
    var expiration: ExpirationClaim?
    var issuedAt: IssuedAtClaim?
    var notBefore: NotBeforeClaim?
    /// Every claim, as it came.
    var all: [String: JSONValue]

    /// The registered claims, by their names in the token.
    private enum CodingKeys: CodingKey {
        case iss, sub, aud, exp, iat, nbf
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        issuer = try container.decodeIfPresent(IssuerClaim.self, forKey: .iss)
        subject = try container.decodeIfPresent(SubjectClaim.self, forKey: .sub)
        audience = try container.decodeIfPresent(AudienceClaim.self, forKey: .aud)
        expiration = try container.decodeIfPresent(ExpirationClaim.self, forKey: .exp)
        issuedAt = try container.decodeIfPresent(IssuedAtClaim.self, forKey: .iat)
        notBefore = try container.decodeIfPresent(NotBeforeClaim.self, forKey: .nbf)
        all = try decoder.singleValueContainer().decode([String: JSONValue].self)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(all)
    }

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

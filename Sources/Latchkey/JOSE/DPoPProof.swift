import Crypto
package import Foundation

/// One DPoP proof (RFC 9449 §4.2): a JWT signed with the account's key that shows a request comes
/// from the key's holder. A pure value: the request, the time and what the provider asked for
/// go in; the `DPoP` header's value comes out.
package struct DPoPProof: Sendable {
    /// The request's method (`htm`).
    package var method: String
    /// The request's URL; `htu` is this without its query and fragment.
    package var url: URL
    /// When the proof is made; `iat` is this less ``issuedAtMargin``, in whole seconds.
    package var issuedAt: Date
    /// The proof's unique id (`jti`).
    package var id: String
    /// The access token the request carries, hashed into `ath`; `nil` at the token endpoint.
    package var accessToken: String?
    /// The provider's or resource server's current nonce, when it gave one.
    package var nonce: String?

    /// A proof for `method` `url` made at `issuedAt`, with a fresh random id.
    package init(
        method: String, url: URL, issuedAt: Date, accessToken: String? = nil, nonce: String? = nil,
        id: String = UUID().uuidString
    ) {
        self.method = method
        self.url = url
        self.issuedAt = issuedAt
        self.accessToken = accessToken
        self.nonce = nonce
        self.id = id
    }
}

// The proof as a JWT: its claims, as the RFC names and normalizes them, and its signature.
extension DPoPProof {
    /// `htu`: the URL without its query and fragment (RFC 9449 §4.2), normalized as a server
    /// compares it (§4.3, RFC 3986 §6.2.2–6.2.3): scheme and host in lower case, the scheme's
    /// default port dropped, an empty path as `/`, no user information; the path otherwise as
    /// sent (its percent-encoding and dot segments untouched).
    package var targetURI: String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            return url.absoluteString
        }
        components.query = nil
        components.fragment = nil
        components.user = nil
        components.password = nil
        let scheme = components.scheme?.lowercased()
        components.scheme = scheme
        components.percentEncodedHost = components.percentEncodedHost?.lowercased()
        if (scheme == "https" && components.port == 443) || (scheme == "http" && components.port == 80) {
            components.port = nil
        }
        if components.percentEncodedPath.isEmpty { components.percentEncodedPath = "/" }
        return components.string ?? url.absoluteString
    }

    /// How far `iat` is set back from ``issuedAt``, in seconds. A server may allow no `iat`
    /// after its own time (Glewlwyd by default) and read that time from a coarse clock (glibc's
    /// `time()`, up to a tick behind the one a client reads): a proof made in a second's first
    /// milliseconds, or by a client whose clock runs a little ahead, would be refused as from
    /// the future. A second back costs one second of the server's window for a proof's age,
    /// which is tens of seconds or minutes everywhere we know of.
    package static let issuedAtMargin: TimeInterval = 1

    /// The claims the proof carries, as the JSON text signed (keys sorted).
    package var claimsJSON: String {
        let iat = ProviderNumbers.integer(
            (issuedAt.timeIntervalSince1970 - Self.issuedAtMargin).rounded(.down), fallback: 0, in: Int.min...Int.max)
        var members: [String] = []
        if let accessToken {
            members.append(
                #""ath":"# + JSONText.quoted(Base64URL.encode(Data(SHA256.hash(data: Data(accessToken.utf8))))))
        }
        members += [#""htm":"# + JSONText.quoted(method), #""htu":"# + JSONText.quoted(targetURI), #""iat":\#(iat)"#]
        members.append(#""jti":"# + JSONText.quoted(id))
        if let nonce { members.append(#""nonce":"# + JSONText.quoted(nonce)) }
        return "{" + members.joined(separator: ",") + "}"
    }

    /// The signed proof, the `DPoP` header's value.
    package func signed(with key: DPoPKey) throws(ProviderError) -> String {
        let input = key.encodedHeader + "." + Base64URL.encode(Data(claimsJSON.utf8))
        do {
            return input + "." + Base64URL.encode(try key.sign(Data(input.utf8)))
        } catch {
            throw ProviderError(.unsupported, reason: "A DPoP proof could not be signed.")
        }
    }
}

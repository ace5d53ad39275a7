package import Foundation
import HTTPTypes
import Synchronization

/// The nonces servers gave for DPoP proofs (RFC 9449 §8 for a provider, §9 for a resource
/// server), by origin: the latest one a server sent, in a challenge or beside a success, goes
/// into the next proof for that server.
package final class DPoPNonces: Sendable {
    private let nonces = Mutex<[String: String]>([:])

    package init() {}

    /// The nonce last given by the server at `url`'s origin.
    package func nonce(for url: URL) -> String? {
        let origin = Self.origin(of: url)
        return nonces.withLock { $0[origin] }
    }

    /// Keeps `nonce` as the one the server at `url`'s origin wants next.
    package func record(_ nonce: String, for url: URL) {
        let origin = Self.origin(of: url)
        nonces.withLock { $0[origin] = nonce }
    }

    /// Scheme, host and port: a nonce belongs to a server, not to one of its paths.
    static func origin(of url: URL) -> String {
        "\(url.scheme?.lowercased() ?? "")://\(url.host?.lowercased() ?? "")\(url.port.map { ":\($0)" } ?? "")"
    }
}

/// What makes a request carry a DPoP proof: the account's key, the access token the request
/// carries (hashed into `ath`, and sent as `Authorization: DPoP`), the nonces, and the time.
struct DPoPSigning: Sendable {
    var key: DPoPKey
    var accessToken: String?
    var nonces: DPoPNonces
    var clock: any LatchkeyClock

    /// `request` with a fresh proof, and `Authorization: DPoP` when it carries an access token.
    func prove(_ request: HTTPRequest) throws(ProviderError) -> HTTPRequest {
        guard let url = request.url else {
            throw ProviderError(.insecureEndpoint, reason: "The request has no URL to bind a DPoP proof to.")
        }
        var request = request
        let proof = DPoPProof(
            method: request.method.rawValue, url: url, issuedAt: clock.date, accessToken: accessToken,
            nonce: nonces.nonce(for: url))
        request.headerFields[.dpop] = try proof.signed(with: key)
        if let accessToken { request.headerFields[.authorization] = "DPoP \(accessToken)" }
        return request
    }

    /// Sends `request` with a proof through `send`. A nonce the server sends is kept; when the
    /// server refuses the proof for want of a nonce (`use_dpop_nonce`, RFC 9449 §8.1 and §9.1)
    /// and gives a new one, the request goes once more with it, and never a third time.
    func send(
        _ request: HTTPRequest, _ send: @Sendable (HTTPRequest) async throws(ProviderError) -> HTTPTransportResponse
    ) async throws(ProviderError) -> HTTPTransportResponse {
        guard let url = request.url else { return try await send(try prove(request)) }
        let used = nonces.nonce(for: url)
        let first = try await send(try prove(request))
        guard let nonce = first.response.headerFields[.dpopNonce] else { return first }
        nonces.record(nonce, for: url)
        guard Self.asksForNonce(first), nonce != used else { return first }
        let second = try await send(try prove(request))
        if let next = second.response.headerFields[.dpopNonce] { nonces.record(next, for: url) }
        return second
    }

    /// Whether `answer` refuses a proof for want of a (new) nonce: a token endpoint's 400
    /// `use_dpop_nonce`, or a resource's 401 whose DPoP challenge says so.
    static func asksForNonce(_ answer: HTTPTransportResponse) -> Bool {
        switch answer.response.status.code {
        case 400:
            return ProviderWire.object(answer.body)?["error"]?.stringValue == OAuthErrorCode.useDPoPNonce.rawValue
        case 401:
            return AuthenticationChallenge.parse(answer.response.headerFields[values: .wwwAuthenticate])
                .contains { $0.scheme == "dpop" && $0.error == .useDPoPNonce }
        default:
            return false
        }
    }
}

// Both names are valid field names (RFC 9110 §5.1 tokens), so neither unwrap can fail.
extension HTTPField.Name {
    /// The DPoP proof (RFC 9449 §4.1).
    static let dpop = HTTPField.Name("DPoP")!
    /// A server's nonce for the next proof (RFC 9449 §8).
    static let dpopNonce = HTTPField.Name("DPoP-Nonce")!
}

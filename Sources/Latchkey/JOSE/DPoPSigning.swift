package import Foundation
import HTTPTypes
import NIOConcurrencyHelpers

/// The nonces servers gave for DPoP proofs (RFC 9449 §8 for a provider, §9 for a resource
/// server), by origin: the latest one a server sent, in a challenge or beside a success, goes
/// into the next proof for that server. Shared through the storage given, else through the
/// storage of the store whose call this is (``StorageCapabilities/current``), so that every
/// process sharing it sees the latest; a storage failure falls back to this process's own (a
/// stale nonce costs one challenge).
package final class DPoPNonces: Sendable {
    private let nonces = NIOLockedValueBox<[String: String]>([:])
    private let storage: (any DPoPNonceStorage)?
    /// What the nonces belong to besides their origin: a provider's client (a provider may keep
    /// one nonce per client), or nothing for resource servers.
    private let scope: String

    /// Nonces shared through `storage` (a store's own, for resource servers), or, without one,
    /// through the storage of whichever store calls (a provider's).
    package init(scope: String = "", storage: (any DPoPNonceStorage)? = nil) {
        self.scope = scope
        self.storage = storage
    }

    /// Where the nonces are shared now.
    private var shared: (any DPoPNonceStorage)? { storage ?? StorageCapabilities.current.dpopNonces }

    /// The nonce last given by the server at `url`'s origin. The store is read for a server that
    /// gives nonces, and once for any other (one that never did costs no read per request; if it
    /// starts to, its first challenge tells this process).
    package func nonce(for url: URL) async -> String? {
        let key = self.key(for: url)
        // nil: never looked; "": looked, and the server gave none.
        let known = nonces.withLockedValue { nonces in
            defer { if nonces[key] == nil { nonces[key] = "" } }
            return nonces[key]
        }
        if known != "", let storage = shared,
            let stored = try? await storage.dpopNonce(for: key)
        {
            nonces.withLockedValue { $0[key] = stored }
            return stored
        }
        return known?.isEmpty == false ? known : nil
    }

    /// Writes the nonces learned outside a store's call (a sign-in's) to `storage`.
    package func flush(into storage: (any DPoPNonceStorage)?) async {
        guard let storage else { return }
        for (key, nonce) in nonces.withLockedValue({ $0 }) where !nonce.isEmpty {
            try? await storage.setDPoPNonce(nonce, for: key)
        }
    }

    /// Keeps `nonce` as the one the server at `url`'s origin wants next.
    package func record(_ nonce: String, for url: URL) async {
        let key = self.key(for: url)
        let changed = nonces.withLockedValue { nonces in
            defer { nonces[key] = nonce }
            return nonces[key] != nonce
        }
        guard !nonce.isEmpty else { return }
        if changed, let storage = shared { try? await storage.setDPoPNonce(nonce, for: key) }
    }

    /// Scope, scheme, host and port: a nonce belongs to a server, not to one of its paths.
    private func key(for url: URL) -> String {
        let origin =
            "\(url.scheme?.lowercased() ?? "")://\(url.host?.lowercased() ?? "")\(url.port.map { ":\($0)" } ?? "")"
        return scope.isEmpty ? origin : "\(scope) \(origin)"
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
    func prove(_ request: HTTPRequest) async throws(ProviderError) -> HTTPRequest {
        guard let url = request.url else {
            throw ProviderError(.insecureEndpoint, reason: "The request has no URL to bind a DPoP proof to.")
        }
        var request = request
        let proof = DPoPProof(
            method: request.method.rawValue, url: url, issuedAt: clock.date, accessToken: accessToken,
            nonce: await nonces.nonce(for: url))
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
        guard let url = request.url else { return try await send(try await prove(request)) }
        let proved = try await prove(request)
        let used = proved.headerFields[.dpop].flatMap(UnverifiedClaims.read)?["nonce"]?.stringValue
        let first = try await send(proved)
        guard let nonce = first.response.headerFields[.dpopNonce] else { return first }
        await nonces.record(nonce, for: url)
        guard Self.asksForNonce(first), nonce != used else { return first }
        let second = try await send(try await prove(request))
        if let next = second.response.headerFields[.dpopNonce] { await nonces.record(next, for: url) }
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

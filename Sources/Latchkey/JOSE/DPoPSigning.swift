package import Foundation
import HTTPTypes
import Logging
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
            defer { if nonces[key] == nil { Self.remember("", for: key, in: &nonces) } }
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
            defer { Self.remember(nonce, for: key, in: &nonces) }
            return nonces[key] != nonce
        }
        guard !nonce.isEmpty else { return }
        if changed, let storage = shared { try? await storage.setDPoPNonce(nonce, for: key) }
    }

    /// Whether the server at `url`'s origin was seen, within the last ``rotationMemory``, moving
    /// its nonce on as proofs used it (by this process or any sharing the store): such a server
    /// has one nonce at a time for every caller, and concurrent callers spend each other's.
    package func rotatesOnUse(_ url: URL, now: Date) async -> Bool {
        let key = self.key(for: url) + Self.rotationSuffix
        let seen =
            if let storage = shared, let stored = try? await storage.dpopNonce(for: key) {
                stored
            } else {
                nonces.withLockedValue { $0[key] }
            }
        guard let seen, let seconds = Double(seen) else { return false }
        return now.timeIntervalSince1970 - seconds < Self.rotationMemory
    }

    /// Notes that the server at `url`'s origin moved its nonce on past the one a proof carried.
    package func noteRotation(for url: URL, now: Date) async {
        let key = self.key(for: url) + Self.rotationSuffix
        let value = String(now.timeIntervalSince1970)
        nonces.withLockedValue { Self.remember(value, for: key, in: &$0) }
        if let storage = shared { try? await storage.setDPoPNonce(value, for: key) }
    }

    /// Keeps `value` under `key` in this process's copy, which holds no more than twice the
    /// servers a storage keeps (``DPoPNonceLimit``): past that it starts again from the storage.
    private static func remember(_ value: String, for key: String, in nonces: inout [String: String]) {
        if nonces[key] == nil, nonces.count >= 2 * DPoPNonceLimit.servers { nonces.removeAll() }
        nonces[key] = value
    }

    /// How long a server seen rotating its nonce on use is treated so.
    static let rotationMemory: TimeInterval = 60
    private static let rotationSuffix = " rotates-on-use"

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
    var logger: Logger = .disabled("latchkey.dpop")

    /// Runs the retries of a request whose proof was refused for want of a nonce under a lock
    /// other processes' retries wait for, so that retriers do not spend each other's nonces. A
    /// class around the closure: a task-local holding a function value crashed release builds
    /// (`swift_task_localValuePush`, Swift 6.3).
    final class RetryRunner: Sendable {
        /// Runs the retries at the server of the URL given, in that server's turn.
        let run:
            @Sendable (URL, @escaping @Sendable () async -> Result<HTTPTransportResponse, ProviderError>) async ->
                Result<HTTPTransportResponse, ProviderError>

        init(
            _ run:
                @escaping @Sendable (URL, @escaping @Sendable () async -> Result<HTTPTransportResponse, ProviderError>)
                async -> Result<HTTPTransportResponse, ProviderError>
        ) {
            self.run = run
        }
    }

    /// The runner of this task's nonce retries: a credential's own requests outside its
    /// transaction set it (``Credential/withNonceRetriesInTurn(_:)``), running them in the
    /// server's turn (``CredentialStore/nonceTurn(at:_:)``); without one, retries run as they
    /// are (a refresh's, which holds the credential's lease).
    @TaskLocal static var retryRunner: RetryRunner?

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

    /// Sends `request` with a proof through `send`. A nonce the server sends is kept. When the
    /// server refuses the proof for want of a nonce (`use_dpop_nonce`, RFC 9449 §8.1 and §9.1),
    /// the request goes again with the newest nonce — the challenge's, or a newer one another
    /// process stored since — at most ``NonceRetries/maximum`` times, after a short random pause
    /// (``NonceRetries/pause(before:)``); never in a loop. With a ``retryRunner``, the retries run
    /// through it, and so does the whole request while the server is one that moves its nonce on
    /// as it is used (``DPoPNonces/rotatesOnUse(_:now:)``): callers then take turns instead of
    /// spending each other's nonces.
    func send(
        _ request: HTTPRequest,
        _ send: @escaping @Sendable (HTTPRequest) async throws(ProviderError) -> HTTPTransportResponse
    ) async throws(ProviderError) -> HTTPTransportResponse {
        guard let url = request.url else { return try await send(try await prove(request)) }
        let runner = Self.retryRunner
        if let runner, await nonces.rotatesOnUse(url, now: clock.date) {
            return try await runner.run(url) { await attempts(request, url: url, after: nil, send) }.get()
        }
        let first = try await attempt(request, url: url, send)
        guard first.asksForNonce else { return first.answer }
        guard let runner else { return try await attempts(request, url: url, after: first.answer, send).get() }
        return try await runner.run(url) { await attempts(request, url: url, after: first.answer, send) }.get()
    }

    /// The request's attempts after `first` (or from the first, when `nil`): until one is not
    /// refused for want of a nonce, at most ``NonceRetries/maximum`` retries.
    private func attempts(
        _ request: HTTPRequest, url: URL, after first: HTTPTransportResponse?,
        _ send: @escaping @Sendable (HTTPRequest) async throws(ProviderError) -> HTTPTransportResponse
    ) async -> Result<HTTPTransportResponse, ProviderError> {
        do throws(ProviderError) {
            var answer: HTTPTransportResponse
            if let first {
                answer = first
            } else {
                let attempt = try await attempt(request, url: url, send)
                guard attempt.asksForNonce else { return .success(attempt.answer) }
                answer = attempt.answer
            }
            for retry in 1...NonceRetries.maximum {
                if retry > 1 { try? await Task.sleep(for: NonceRetries.pause(before: retry)) }
                logger.debug(
                    "the server asked for a newer DPoP nonce; sending again",
                    metadata: ["retry": "\(retry)", "host": "\(url.host ?? "")"])
                let attempt = try await attempt(request, url: url, send)
                answer = attempt.answer
                guard attempt.asksForNonce else { break }
            }
            return .success(answer)
        } catch {
            return .failure(error)
        }
    }

    /// One proof and send: the answer, the nonce it carries kept (and, when it is not the one
    /// the proof carried, the server noted as moving its nonce on), and whether it refuses the
    /// proof for want of a nonce and gave one to try (a refusal without a nonce is final).
    private func attempt(
        _ request: HTTPRequest, url: URL,
        _ send: @Sendable (HTTPRequest) async throws(ProviderError) -> HTTPTransportResponse
    ) async throws(ProviderError) -> (answer: HTTPTransportResponse, asksForNonce: Bool) {
        let proved = try await prove(request)
        let answer = try await send(proved)
        guard let nonce = answer.response.headerFields[.dpopNonce] else { return (answer, false) }
        await nonces.record(nonce, for: url)
        let used = proved.headerFields[.dpop].flatMap(UnverifiedClaims.read)?["nonce"]?.stringValue
        if let used, used != nonce { await nonces.noteRotation(for: url, now: clock.date) }
        return (answer, Self.asksForNonce(answer))
    }

    /// Whether `answer` refuses a proof for want of a (new) nonce (``ResourceAnswer``): a token
    /// endpoint's 400 `use_dpop_nonce`, or a resource's 401 whose DPoP challenge says so.
    static func asksForNonce(_ answer: HTTPTransportResponse) -> Bool {
        if case .nonceRequired = ResourceAnswer.of(answer.response, body: answer.body) { true } else { false }
    }
}

// Both names are valid field names (RFC 9110 §5.1 tokens), so neither unwrap can fail.
extension HTTPField.Name {
    /// The DPoP proof (RFC 9449 §4.1).
    static let dpop = HTTPField.Name("DPoP")!
    /// A server's nonce for the next proof (RFC 9449 §8).
    static let dpopNonce = HTTPField.Name("DPoP-Nonce")!
}

/// How often, and how far apart, a request whose DPoP proof was refused for want of a nonce is
/// sent again: a server that rotates its nonce at every use (Glewlwyd's `oauth-dpop-nonce-counter`
/// 1) has one nonce for all of a client's processes, and processes that start together spend
/// each other's.
package enum NonceRetries {
    /// Retries after the first refusal, at most.
    package static let maximum = 3

    /// A random pause before retry `retry` (the first goes at once; the second after up to 10 ms,
    /// the third up to 20 ms), so that processes refused together do not come back together.
    static func pause(before retry: Int) -> Duration {
        .microseconds(Int.random(in: 0...(5_000 << min(retry - 1, 4))))
    }
}

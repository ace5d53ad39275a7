import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// The shape of the logout tokens the provider sends: both are in use.
public enum DevProviderLogoutTokenShape: String, Sendable, Codable, CaseIterable {
    /// The final specification's: `typ: logout+jwt` and an `exp` two minutes after `iat`.
    case standard
    /// Draft 06's, as Glewlwyd 2.7.5 sends them: no `typ` (plain `JWT`) and no `exp`.
    case draft06
}

/// A fault in the next logout tokens, so that app developers can test their receivers.
public enum DevProviderLogoutTokenFault: String, Sendable, Codable, CaseIterable {
    /// Each token is sent twice: the second is a replay, which the app must refuse.
    case replay
    /// The `aud` names another client.
    case wrongAudience
    /// The token expired (or, without `exp`, was issued) ten minutes ago.
    case expired
    /// The signature does not verify.
    case badSignature
}

/// The back-channel logouts the provider sends (OpenID Connect Back-Channel Logout 1.0): to
/// each client with a ``DevProviderConfiguration/Client/backchannelLogoutURI`` that got tokens
/// in a session, when that session ends — RP-initiated logout, global sign-out, or an admin
/// request. Sent before the ending request is answered, once, with no retry.
public final class DevProviderBackChannel: Sendable {
    /// One POST of a logout token.
    public struct Delivery: Sendable, Hashable {
        /// Where it went.
        public var uri: String
        /// The client's answer, or `nil` when none came (refused connection, timeout).
        public var status: Int?
        /// The token sent.
        public var logoutToken: String
    }

    private struct Settings {
        var shape = DevProviderLogoutTokenShape.standard
        var fault: DevProviderLogoutTokenFault?
        var deliveries: [Delivery] = []
    }
    private let settings = NIOLockedValueBox(Settings())

    init() {}

    /// The shape of the tokens sent from now on (``DevProviderLogoutTokenShape/standard`` at first).
    public var shape: DevProviderLogoutTokenShape {
        get { settings.withLockedValue { $0.shape } }
        set { settings.withLockedValue { $0.shape = newValue } }
    }

    /// A fault in every token sent from now on, until set to `nil`.
    public var fault: DevProviderLogoutTokenFault? {
        get { settings.withLockedValue { $0.fault } }
        set { settings.withLockedValue { $0.fault = newValue } }
    }

    /// Every POST so far, oldest first.
    public var deliveries: [Delivery] { settings.withLockedValue { $0.deliveries } }

    /// Signs a token for each notice and POSTs it, all at once; returns when every POST is
    /// answered or timed out (thirty seconds: a receiver under load in a test is slow, not gone).
    func deliver(_ notices: [ProviderState.LogoutNotice], keys: SigningKeys, now: Date) async {
        guard !notices.isEmpty else { return }
        let (shape, fault) = settings.withLockedValue { ($0.shape, $0.fault) }
        await withTaskGroup(of: Void.self) { group in
            for notice in notices {
                group.addTask {
                    guard
                        let token = try? await Self.token(for: notice, shape: shape, fault: fault, keys: keys, now: now)
                    else { return }
                    let times = fault == .replay ? 2 : 1
                    for _ in 0..<times {
                        let status = await Self.post(token, to: notice.uri)
                        self.settings.withLockedValue {
                            $0.deliveries.append(Delivery(uri: notice.uri, status: status, logoutToken: token))
                        }
                    }
                }
            }
        }
    }

    static func token(
        for notice: ProviderState.LogoutNotice, shape: DevProviderLogoutTokenShape, fault: DevProviderLogoutTokenFault?,
        keys: SigningKeys, now: Date
    ) async throws -> String {
        try await token(
            issuer: notice.issuer, clientID: notice.clientID, subject: notice.subject, sid: notice.sid, shape: shape,
            fault: fault, keys: keys, now: now)
    }

    static func token(
        issuer: String, clientID: String, subject: String?, sid: String?, shape: DevProviderLogoutTokenShape,
        fault: DevProviderLogoutTokenFault?, keys: SigningKeys, now: Date
    ) async throws -> String {
        let issued = Int(now.timeIntervalSince1970) - (fault == .expired ? 600 : 0)
        var claims: [String: Claim] = [
            "iss": .string(issuer), "aud": .string(fault == .wrongAudience ? "another-client" : clientID),
            "iat": .number(issued), "jti": .string(ProviderState.randomToken(bytes: 16)),
            "events": .object(["http://schemas.openid.net/event/backchannel-logout": .object([:])]),
        ]
        if let subject { claims["sub"] = .string(subject) }
        if let sid { claims["sid"] = .string(sid) }
        if shape == .standard { claims["exp"] = .number(issued + 120) }
        let token = try await keys.sign(
            ClaimSet(claims), algorithm: "RS256", type: shape == .standard ? "logout+jwt" : "JWT")
        guard fault == .badSignature, let dot = token.lastIndex(of: ".") else { return token }
        // Another signature of the right length: the first character changed.
        let signature = token[token.index(after: dot)...]
        let flipped = (signature.first == "A" ? "B" : "A") + signature.dropFirst()
        return token[...dot] + flipped
    }

    /// POSTs `logout_token` as a form (§2.5); the status, or `nil` when no answer came.
    static func post(_ token: String, to uri: String) async -> Int? {
        var request = HTTPClientRequest(url: uri)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(ByteBuffer(string: "logout_token=" + token))
        guard let response = try? await HTTPClient.shared.execute(request, timeout: .seconds(30)) else { return nil }
        _ = try? await response.body.collect(upTo: 64 * 1024)
        return Int(response.status.code)
    }
}

import Crypto
import Foundation

extension ProviderState {
    // MARK: Revocation (RFC 7009) and introspection (RFC 7662)

    /// What a token is, looked up in every table whatever the hint says (the hint only orders
    /// the search, RFC 7009 §2.1).
    enum TokenLookup {
        case access(jti: String, AccessRecord)
        case refresh(RefreshRecord)
        case deviceSecret(DeviceSecretRecord)
        case unknown
    }

    func lookup(_ token: String) -> TokenLookup {
        if let jti = accessTokenIDs[token], let record = accessTokens[jti] { return .access(jti: jti, record) }
        if let record = refreshTokens[token] { return .refresh(record) }
        if let record = deviceSecrets[token] { return .deviceSecret(record) }
        return .unknown
    }

    /// Revokes `token` if `client` owns it. Unknown tokens are not an error (RFC 7009 §2.2).
    func revoke(_ token: String, client: DevProviderConfiguration.Client) throws {
        switch lookup(token) {
        case .access(let jti, let record):
            guard grants[record.grantID]?.clientID == client.clientID else { throw Self.otherClient }
            accessTokens[jti]?.revoked = true
        case .refresh(let record):
            guard grants[record.grantID]?.clientID == client.clientID else { throw Self.otherClient }
            // A rotated-out refresh token is no longer valid: revoking it does nothing (RFC 7009
            // §2.2), unless its coming back is a replay that ends the grant (RFC 9700 §4.14.2).
            guard !record.retired || configuration.revokesGrantOnRefreshReplay else { break }
            revokeGrant(record.grantID)
        case .deviceSecret(let record):
            guard record.clientID == client.clientID else { throw Self.otherClient }
            deviceSecrets[token]?.revoked = true
        case .unknown:
            break
        }
    }

    static let otherClient = OAuthFailure.invalidRequest("The token was issued to another client.")

    /// How many grants of `username` are not revoked.
    func liveGrants(of username: String) -> Int {
        grants.values.count { $0.username == username && !$0.revoked }
    }

    /// A grant and every token of it, revoked.
    func revokeGrant(_ grantID: String) {
        grants[grantID]?.revoked = true
        let tokens = grantTokens[grantID] ?? ([], [])
        for jti in tokens.jtis { accessTokens[jti]?.revoked = true }
        for token in tokens.refreshTokens { refreshTokens[token]?.retired = true }
    }

    /// The introspection answer for `token` (RFC 7662 §2.2).
    func introspect(_ token: String) -> [String: Claim] {
        let date = now()
        switch lookup(token) {
        case .access(let jti, let record):
            guard let grant = grants[record.grantID], isUsable(record, at: date) else {
                return ["active": .bool(false)]
            }
            var answer = description(of: grant, issued: record.issuedAt, expires: record.expiresAt)
            answer["token_type"] = .string(grant.jkt == nil ? "Bearer" : "DPoP")
            answer["jti"] = .string(jti)
            answer["aud"] = .string(record.audience ?? grant.issuer)
            if let scopes = record.scopes { answer["scope"] = .string(scopes.joined(separator: " ")) }
            if let jkt = grant.jkt { answer["cnf"] = .object(["jkt": .string(jkt)]) }
            return answer
        case .refresh(let record):
            guard let grant = grants[record.grantID], !grant.revoked, !record.retired, record.expiresAt > date,
                sessions[grant.sid]?.ended == false
            else { return ["active": .bool(false)] }
            var answer = description(of: grant, issued: record.issuedAt, expires: record.expiresAt)
            answer["token_type"] = .string("refresh_token")
            if let jkt = grant.jkt { answer["cnf"] = .object(["jkt": .string(jkt)]) }
            return answer
        case .deviceSecret(let record):
            guard !record.revoked, record.expiresAt > date, let user = configuration.user(named: record.username) else {
                return ["active": .bool(false)]
            }
            return [
                "active": .bool(true), "token_type": .string("device_secret"), "client_id": .string(record.clientID),
                "sub": .string(user.sub), "username": .string(user.username), "sid": .string(record.sid),
                "iss": .string(issuer), "iat": .number(Int(record.issuedAt.timeIntervalSince1970)),
                "exp": .number(Int(record.expiresAt.timeIntervalSince1970)),
            ]
        case .unknown:
            return ["active": .bool(false)]
        }
    }

    func description(of grant: Grant, issued: Date, expires: Date) -> [String: Claim] {
        [
            "active": .bool(true), "scope": .string(grant.scopes.joined(separator: " ")),
            "client_id": .string(grant.clientID), "username": .string(grant.username),
            "sub": .string(configuration.user(named: grant.username)?.sub ?? grant.username),
            "sid": .string(grant.sid), "iss": .string(grant.issuer), "iat": .number(Int(issued.timeIntervalSince1970)),
            "exp": .number(Int(expires.timeIntervalSince1970)),
        ]
    }

    func isUsable(_ record: AccessRecord, at date: Date) -> Bool {
        guard !record.revoked, record.expiresAt > date, let grant = grants[record.grantID], !grant.revoked else {
            return false
        }
        return sessions[grant.sid]?.ended == false
    }

    /// The grant behind a valid access token, for userinfo and global sign-out.
    /// What a usable access token may do at a resource: its user, its scopes (narrowed by a
    /// refresh, or the grant's) and the resource it was issued for, if one.
    func resourceAccess(accessToken: String) throws -> (username: String, scopes: [String], audience: String?) {
        guard case .access(_, let record) = lookup(accessToken), isUsable(record, at: now()),
            let grant = grants[record.grantID]
        else { throw OAuthFailure.invalidToken("The access token is not valid.") }
        return (grant.username, record.scopes ?? grant.scopes, record.audience)
    }

    func authorize(accessToken: String) throws -> Grant {
        guard case .access(_, let record) = lookup(accessToken), isUsable(record, at: now()),
            let grant = grants[record.grantID]
        else { throw OAuthFailure.invalidToken("The access token is not valid.") }
        return grant
    }

    // MARK: Sessions ending

    /// Ends a session and revokes every token issued in it (RP-initiated logout). Returns the
    /// journey session it was authorized from, which ends with it.
    @discardableResult
    func endSession(sid: String) -> String? {
        guard let session = sessions[sid] else { return nil }
        if !session.ended { noteLogout(of: session) }
        sessions[sid]?.ended = true
        for (id, grant) in grants where grant.sid == sid { revokeGrant(id) }
        for (secret, record) in deviceSecrets where record.sid == sid { deviceSecrets[secret]?.revoked = true }
        browserSessions = browserSessions.filter { $0.value != sid }
        return sessions[sid]?.journeySession
    }

    /// Owes a back-channel logout to each client with a logout URI that got tokens in `session`.
    private func noteLogout(of session: Session) {
        guard let user = configuration.user(named: session.username) else { return }
        let clients = Set(grants.values.filter { $0.sid == session.sid }.map { "\($0.clientID) \($0.issuer)" })
        for key in clients.sorted() {
            let parts = key.split(separator: " ", maxSplits: 1).map(String.init)
            guard parts.count == 2, let client = self.clients.client(parts[0]), let uri = client.backchannelLogoutURI
            else { continue }
            logoutNotices.append(
                LogoutNotice(
                    issuer: parts[1], clientID: client.clientID, uri: uri, subject: user.sub,
                    sid: client.backchannelLogoutSessionRequired ?? true ? session.sid : nil))
        }
    }

    /// The back-channel logouts owed, handed to the caller to send.
    func takeLogoutNotices() -> [LogoutNotice] {
        defer { logoutNotices = [] }
        return logoutNotices
    }

    /// Ends every session of `username` and revokes every grant and device secret (global sign-out).
    func signOutEverywhere(username: String) -> (sessions: Int, grants: Int) {
        let sids = sessions.values.filter { $0.username == username && !$0.ended }.map(\.sid)
        let grantIDs = grants.values.filter { $0.username == username && !$0.revoked }.map(\.id)
        for sid in sids { endSession(sid: sid) }
        for id in grantIDs { revokeGrant(id) }
        for (secret, record) in deviceSecrets where record.username == username {
            deviceSecrets[secret]?.revoked = true
        }
        return (sids.count, grantIDs.count)
    }
}

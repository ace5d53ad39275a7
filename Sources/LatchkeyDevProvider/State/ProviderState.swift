import Crypto
import Foundation

/// Everything the provider remembers: sessions, grants, tokens, codes. One actor, so that each
/// rule (rotation, replay detection, revocation cascades) is applied atomically. State is
/// changed before any suspension point, so a concurrent request never sees half a change.
actor ProviderState {
    struct Session {
        var sid: String
        var username: String
        var authTime: Date
        var ended = false
        /// The journey session (PingAM's SSO session) this one was authorized from, if any.
        var journeySession: String?
    }

    struct Grant {
        var id: String
        /// The issuer the grant's tokens name: the root one or the Ping realm's.
        var issuer: String
        var clientID: String
        var username: String
        var scopes: [String]
        var sid: String
        var revoked = false
    }

    struct AccessRecord {
        var grantID: String
        var expiresAt: Date
        var issuedAt: Date
        var revoked = false
    }

    struct RefreshRecord {
        var grantID: String
        var expiresAt: Date
        var issuedAt: Date
        var retired = false
    }

    struct DeviceSecretRecord {
        var username: String
        var sid: String
        var clientID: String
        var scopes: [String]
        var expiresAt: Date
        var issuedAt: Date
        var revoked = false
    }

    struct AuthorizationCode {
        var issuer: String
        var clientID: String
        var redirectURI: String
        var username: String
        var sid: String
        var scopes: [String]
        var nonce: String?
        var codeChallenge: String?
        var expiresAt: Date
        var used = false
        var grantID: String?
    }

    struct DeviceRequest {
        enum Status {
            case pending
            case approved(username: String, sid: String)
            case denied, consumed
        }
        var clientID: String
        var userCode: String
        var scopes: [String]
        var expiresAt: Date
        var interval: Int
        var lastPoll: Date?
        var status: Status = .pending
    }

    /// The answer to a successful token request, ready to serialize.
    typealias TokenAnswer = [String: Claim]

    let configuration: DevProviderConfiguration
    let keys: SigningKeys
    /// The lifetime of new access tokens, in seconds (the configuration's, until a test sets another).
    private var accessTokenLifetime: Int
    /// The lifetime of new ID tokens, in seconds (the configuration's, until a test sets another).
    private var idTokenLifetime: Int
    private(set) var issuer = ""
    private let now: @Sendable () -> Date

    private var sessions: [String: Session] = [:]
    private var browserSessions: [String: String] = [:]  // cookie value → sid
    private var grants: [String: Grant] = [:]
    private var accessTokens: [String: AccessRecord] = [:]  // jti → record
    private var accessTokenIDs: [String: String] = [:]  // token → jti
    private var refreshTokens: [String: RefreshRecord] = [:]
    /// Each grant's access token ids and refresh tokens, so that revoking a grant does not walk
    /// every token the provider ever issued.
    private var grantTokens: [String: (jtis: [String], refreshTokens: [String])] = [:]
    private var deviceSecrets: [String: DeviceSecretRecord] = [:]
    private var codes: [String: AuthorizationCode] = [:]
    private var deviceRequests: [String: DeviceRequest] = [:]  // device code → request
    private var userCodes: [String: String] = [:]  // user code → device code

    init(
        configuration: DevProviderConfiguration, signingKeys: DevProviderSigningKeys,
        now: @escaping @Sendable () -> Date
    ) async throws {
        self.configuration = configuration
        self.now = now
        accessTokenLifetime = configuration.accessTokenLifetime
        idTokenLifetime = configuration.idTokenLifetime
        keys = try await SigningKeys(gracePeriod: TimeInterval(configuration.keyGracePeriod), initial: signingKeys)
    }

    func setIssuer(_ issuer: String) { self.issuer = issuer }

    func setAccessTokenLifetime(_ seconds: Int) { accessTokenLifetime = seconds }
    func setIDTokenLifetime(_ seconds: Int) { idTokenLifetime = seconds }

    var currentDate: Date { now() }

    // MARK: Users and sessions

    func checkPassword(username: String, password: String) -> DevProviderConfiguration.User? {
        guard let user = configuration.user(named: username), user.password == password else { return nil }
        return user
    }

    /// A new session for a sign-in (each sign-in is one "device").
    func startSession(username: String, journeySession: String? = nil) -> String {
        let sid = Self.randomToken(bytes: 16)
        sessions[sid] = Session(sid: sid, username: username, authTime: now(), journeySession: journeySession)
        return sid
    }

    /// A new OAuth session authorized by a journey session: its own session, as in AM, so that
    /// ending the journey session revokes none of its tokens.
    func startSession(authorizedBy journeySession: JourneyState.Session) -> Session {
        let sid = startSession(username: journeySession.username, journeySession: journeySession.id)
        return sessions[sid] ?? Session(sid: sid, username: journeySession.username, authTime: now())
    }

    /// A browser session: the sid it stands for, and the cookie value that names it.
    func startBrowserSession(username: String) -> (sid: String, cookie: String) {
        let sid = startSession(username: username)
        let cookie = Self.randomToken(bytes: 24)
        browserSessions[cookie] = sid
        return (sid, cookie)
    }

    /// The live session a browser cookie names.
    func browserSession(cookie: String?) -> Session? {
        guard let cookie, let sid = browserSessions[cookie], let session = sessions[sid], !session.ended else {
            return nil
        }
        return session
    }

    // MARK: Authorization codes

    func issueCode(
        issuer: String, clientID: String, redirectURI: String, session: Session, scopes: [String], nonce: String?,
        codeChallenge: String?
    ) -> String {
        let code = Self.randomToken(bytes: 24)
        codes[code] = AuthorizationCode(
            issuer: issuer, clientID: clientID, redirectURI: redirectURI, username: session.username, sid: session.sid,
            scopes: scopes, nonce: nonce, codeChallenge: codeChallenge, expiresAt: now().addingTimeInterval(60))
        return code
    }

    func exchangeCode(
        _ code: String, client: DevProviderConfiguration.Client, redirectURI: String?, verifier: String?, issuer: String
    ) async throws -> TokenAnswer {
        guard var record = codes[code], record.clientID == client.clientID, record.issuer == issuer else {
            throw OAuthFailure.invalidGrant("The authorization code is not valid.")
        }
        if record.used {
            // RFC 6749 §4.1.2: a code used twice revokes what it was exchanged for.
            if let grantID = record.grantID { revokeGrant(grantID) }
            throw OAuthFailure.invalidGrant("The authorization code was already used.")
        }
        record.used = true
        codes[code] = record
        guard record.expiresAt > now() else { throw OAuthFailure.invalidGrant("The authorization code has expired.") }
        guard redirectURI == record.redirectURI else {
            throw OAuthFailure.invalidGrant("redirect_uri does not match the authorization request.")
        }
        if let challenge = record.codeChallenge {
            guard let verifier else { throw OAuthFailure.invalidGrant("code_verifier is missing.") }
            guard Self.isValidVerifier(verifier) else {
                throw OAuthFailure.invalidRequest("code_verifier is not 43 to 128 unreserved characters.")
            }
            guard Data(SHA256.hash(data: Data(verifier.utf8))).base64URLEncoded == challenge else {
                throw OAuthFailure.invalidGrant("code_verifier does not match the code challenge.")
            }
        } else if verifier != nil {
            throw OAuthFailure.invalidGrant("code_verifier was sent for a request without a code challenge.")
        }
        guard let session = sessions[record.sid], !session.ended else {
            throw OAuthFailure.invalidGrant("The session of this code has ended.")
        }
        let grantID = newGrant(
            issuer: issuer, clientID: client.clientID, username: record.username, scopes: record.scopes,
            sid: record.sid)
        codes[code]?.grantID = grantID
        return try await issueTokens(grantID: grantID, nonce: record.nonce, newDeviceSecret: true)
    }

    // MARK: Grants

    func passwordGrant(
        client: DevProviderConfiguration.Client, username: String, password: String, scopes: [String], issuer: String
    ) async throws -> TokenAnswer {
        guard let user = checkPassword(username: username, password: password) else {
            throw OAuthFailure.invalidGrant("The username or password is wrong.")
        }
        let sid = startSession(username: user.username)
        let grantID = newGrant(
            issuer: issuer, clientID: client.clientID, username: user.username, scopes: scopes, sid: sid)
        return try await issueTokens(
            grantID: grantID, nonce: nil, newDeviceSecret: true, idToken: configuration.passwordGrantIssuesIDToken)
    }

    func refresh(
        _ refreshToken: String, client: DevProviderConfiguration.Client, scopes requested: [String]?, issuer: String
    ) async throws -> TokenAnswer {
        guard let record = refreshTokens[refreshToken], var grant = grants[record.grantID],
            grant.clientID == client.clientID, grant.issuer == issuer
        else { throw OAuthFailure.invalidGrant("The refresh token is not valid.") }
        if record.retired {
            // A rotated-out refresh token came back: someone holds a copy. Revoke the grant.
            guard configuration.revokesGrantOnRefreshReplay else {
                throw OAuthFailure.invalidGrant("The refresh token was already used.")
            }
            revokeGrant(grant.id)
            throw OAuthFailure.invalidGrant("The refresh token was already used; the grant is revoked.")
        }
        guard !grant.revoked, record.expiresAt > now() else {
            throw OAuthFailure.invalidGrant("The refresh token has expired or was revoked.")
        }
        guard let session = sessions[grant.sid], !session.ended else {
            throw OAuthFailure.invalidGrant("The session of this refresh token has ended.")
        }
        if let requested {
            guard Set(requested).isSubset(of: grant.scopes) else {
                throw OAuthFailure.invalidScope("A refresh cannot add scopes to the grant.")
            }
            grant.scopes = requested
            grants[grant.id] = grant
        }
        if configuration.rotateRefreshTokens {
            refreshTokens[refreshToken]?.retired = true
        }
        return try await issueTokens(
            grantID: grant.id, nonce: nil, newDeviceSecret: false,
            keepRefreshToken: configuration.rotateRefreshTokens ? nil : refreshToken)
    }

    /// `count` grants of `username` to `clientID`, each with a session and a refresh token only:
    /// no signing, no HTTP, for tests that need many live tokens at once.
    func mintRefreshTokens(count: Int, username: String, clientID: String, scopes: [String]) throws -> [String] {
        guard configuration.user(named: username) != nil, configuration.client(clientID) != nil else {
            throw OAuthFailure.invalidRequest("There is no such user or client.")
        }
        let issued = now()
        return (0..<count).map { _ in
            let sid = startSession(username: username)
            let grantID = newGrant(issuer: issuer, clientID: clientID, username: username, scopes: scopes, sid: sid)
            let token = Self.randomToken(bytes: 32)
            refreshTokens[token] = RefreshRecord(
                grantID: grantID,
                expiresAt: issued.addingTimeInterval(TimeInterval(configuration.refreshTokenLifetime)),
                issuedAt: issued)
            grantTokens[grantID, default: ([], [])].refreshTokens.append(token)
            return token
        }
    }

    private func newGrant(issuer: String, clientID: String, username: String, scopes: [String], sid: String)
        -> String
    {
        let id = Self.randomToken(bytes: 12)
        grants[id] = Grant(id: id, issuer: issuer, clientID: clientID, username: username, scopes: scopes, sid: sid)
        return id
    }

    /// Mints the tokens of a grant. State is recorded before signing (a suspension point), so a
    /// revocation that arrives meanwhile already covers them.
    private func issueTokens(
        grantID: String, nonce: String?, newDeviceSecret: Bool, keepRefreshToken: String? = nil, idToken: Bool = true
    ) async throws -> TokenAnswer {
        guard let grant = grants[grantID], let user = configuration.user(named: grant.username),
            let session = sessions[grant.sid], let client = configuration.client(grant.clientID)
        else { throw OAuthFailure.invalidGrant("The grant is not valid.") }
        let issued = now()
        let jti = Self.randomToken(bytes: 12)
        let lifetime = accessTokenLifetime
        accessTokens[jti] = AccessRecord(
            grantID: grantID, expiresAt: issued.addingTimeInterval(TimeInterval(lifetime)), issuedAt: issued)
        grantTokens[grantID, default: ([], [])].jtis.append(jti)
        var answer: TokenAnswer = [
            "token_type": .string("Bearer"), "expires_in": .number(lifetime),
            "scope": .string(grant.scopes.joined(separator: " ")),
        ]
        if grant.scopes.contains("offline_access") && client.grantTypes.contains("refresh_token") {
            if let keepRefreshToken {
                answer["refresh_token"] = .string(keepRefreshToken)
            } else {
                let refreshToken = Self.randomToken(bytes: 32)
                refreshTokens[refreshToken] = RefreshRecord(
                    grantID: grantID,
                    expiresAt: issued.addingTimeInterval(TimeInterval(configuration.refreshTokenLifetime)),
                    issuedAt: issued)
                grantTokens[grantID, default: ([], [])].refreshTokens.append(refreshToken)
                answer["refresh_token"] = .string(refreshToken)
            }
            // Not in RFC 6749, but widely sent (Keycloak and others): when the refresh token
            // expires, which a client's revocation outbox may rely on.
            answer["refresh_expires_in"] = .number(configuration.refreshTokenLifetime)
        }
        if newDeviceSecret && grant.scopes.contains("device_sso") {
            let secret = Self.randomToken(bytes: 32)
            deviceSecrets[secret] = DeviceSecretRecord(
                username: user.username, sid: session.sid, clientID: client.clientID, scopes: grant.scopes,
                expiresAt: issued.addingTimeInterval(TimeInterval(configuration.deviceSecretLifetime)), issuedAt: issued
            )
            answer["device_secret"] = .string(secret)
        }
        let iat = Int(issued.timeIntervalSince1970)
        let accessClaims: [String: Claim] = [
            "iss": .string(grant.issuer), "sub": .string(user.sub), "aud": .string(grant.issuer),
            "client_id": .string(client.clientID),
            "iat": .number(iat), "exp": .number(iat + lifetime), "jti": .string(jti),
            "scope": .string(grant.scopes.joined(separator: " ")), "sid": .string(session.sid),
            "auth_time": .number(Int(session.authTime.timeIntervalSince1970)),
        ]
        let accessToken = try await keys.sign(ClaimSet(accessClaims), algorithm: "RS256", type: "at+jwt")
        accessTokenIDs[accessToken] = jti
        answer["access_token"] = .string(accessToken)
        if idToken && grant.scopes.contains("openid") {
            var claims = idClaims(
                issuer: grant.issuer, user: user, session: session, clientID: client.clientID, scopes: grant.scopes,
                issued: issued)
            if let nonce { claims["nonce"] = .string(nonce) }
            let digest = Data(SHA256.hash(data: Data(accessToken.utf8)))
            claims["at_hash"] = .string(Data(digest.prefix(16)).base64URLEncoded)
            let algorithm = client.idTokenSigningAlgorithm ?? "RS256"
            answer["id_token"] = .string(try await keys.sign(ClaimSet(claims), algorithm: algorithm, type: "JWT"))
        }
        return answer
    }

    private func idClaims(
        issuer: String, user: DevProviderConfiguration.User, session: Session, clientID: String, scopes: [String],
        issued: Date
    ) -> [String: Claim] {
        let iat = Int(issued.timeIntervalSince1970)
        var claims: [String: Claim] = [
            "iss": .string(issuer), "sub": .string(user.sub), "aud": .string(clientID), "azp": .string(clientID),
            "iat": .number(iat), "exp": .number(iat + idTokenLifetime),
            "auth_time": .number(Int(session.authTime.timeIntervalSince1970)), "sid": .string(session.sid),
        ]
        claims.merge(profileClaims(user: user, scopes: scopes)) { _, new in new }
        return claims
    }

    /// The user's claims the scopes allow (OpenID Connect Core §5.4).
    func profileClaims(user: DevProviderConfiguration.User, scopes: [String]) -> [String: Claim] {
        var claims: [String: Claim] = ["sub": .string(user.sub)]
        if scopes.contains("profile") {
            claims["preferred_username"] = .string(user.username)
            claims["name"] = .string(user.name)
        }
        if scopes.contains("email") {
            claims["email"] = .string(user.email)
            claims["email_verified"] = .bool(true)
        }
        return claims
    }

    // MARK: Device authorization (RFC 8628)

    func startDeviceAuthorization(client: DevProviderConfiguration.Client, scopes: [String]) -> (
        deviceCode: String, userCode: String, expiresIn: Int, interval: Int
    ) {
        let deviceCode = Self.randomToken(bytes: 24)
        let alphabet = Array("BCDFGHJKLMNPQRSTVWXZ")
        var generator = SystemRandomNumberGenerator()
        let letters = (0..<8).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] }
        let userCode = String(letters[0..<4]) + "-" + String(letters[4..<8])
        deviceRequests[deviceCode] = DeviceRequest(
            clientID: client.clientID, userCode: userCode, scopes: scopes,
            expiresAt: now().addingTimeInterval(TimeInterval(configuration.deviceCodeLifetime)),
            interval: configuration.devicePollingInterval)
        userCodes[userCode] = deviceCode
        return (deviceCode, userCode, configuration.deviceCodeLifetime, configuration.devicePollingInterval)
    }

    /// Whether `userCode` names a pending request (codes are read without case or dashes).
    func pendingDeviceRequest(userCode: String) -> Bool {
        guard let deviceCode = userCodes[Self.normalizeUserCode(userCode)], let request = deviceRequests[deviceCode],
            case .pending = request.status, request.expiresAt > now()
        else { return false }
        return true
    }

    func decideDeviceRequest(userCode: String, username: String?, approve: Bool) -> Bool {
        guard let deviceCode = userCodes[Self.normalizeUserCode(userCode)], var request = deviceRequests[deviceCode],
            case .pending = request.status, request.expiresAt > now()
        else { return false }
        if approve, let username {
            request.status = .approved(username: username, sid: startSession(username: username))
        } else {
            request.status = .denied
        }
        deviceRequests[deviceCode] = request
        return true
    }

    func pollDevice(_ deviceCode: String, client: DevProviderConfiguration.Client) async throws -> TokenAnswer {
        guard var request = deviceRequests[deviceCode], request.clientID == client.clientID else {
            throw OAuthFailure.invalidGrant("The device code is not valid.")
        }
        let date = now()
        guard request.expiresAt > date else {
            throw OAuthFailure("expired_token", "The device code has expired.")
        }
        defer { deviceRequests[deviceCode] = request }
        switch request.status {
        case .pending:
            if let last = request.lastPoll, date.timeIntervalSince(last) < TimeInterval(request.interval) {
                request.interval += 5
                request.lastPoll = date
                throw OAuthFailure("slow_down", "Polling too fast; wait \(request.interval) seconds between requests.")
            }
            request.lastPoll = date
            throw OAuthFailure("authorization_pending", "The user has not finished yet.")
        case .denied:
            throw OAuthFailure("access_denied", "The user denied the request.")
        case .consumed:
            throw OAuthFailure.invalidGrant("The device code was already used.")
        case .approved(let username, let sid):
            request.status = .consumed
            let grantID = newGrant(
                issuer: issuer, clientID: client.clientID, username: username, scopes: request.scopes, sid: sid)
            deviceRequests[deviceCode] = request
            return try await issueTokens(grantID: grantID, nonce: nil, newDeviceSecret: true)
        }
    }

    static func normalizeUserCode(_ code: String) -> String {
        let letters = code.uppercased().filter { $0.isLetter }
        guard letters.count == 8 else { return code.uppercased() }
        return String(letters.prefix(4)) + "-" + String(letters.suffix(4))
    }

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
            revokeGrant(record.grantID)
        case .deviceSecret(let record):
            guard record.clientID == client.clientID else { throw Self.otherClient }
            deviceSecrets[token]?.revoked = true
        case .unknown:
            break
        }
    }

    private static let otherClient = OAuthFailure.invalidRequest("The token was issued to another client.")

    /// A grant and every token of it, revoked.
    private func revokeGrant(_ grantID: String) {
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
            answer["token_type"] = .string("Bearer")
            answer["jti"] = .string(jti)
            return answer
        case .refresh(let record):
            guard let grant = grants[record.grantID], !grant.revoked, !record.retired, record.expiresAt > date,
                sessions[grant.sid]?.ended == false
            else { return ["active": .bool(false)] }
            var answer = description(of: grant, issued: record.issuedAt, expires: record.expiresAt)
            answer["token_type"] = .string("refresh_token")
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

    private func description(of grant: Grant, issued: Date, expires: Date) -> [String: Claim] {
        [
            "active": .bool(true), "scope": .string(grant.scopes.joined(separator: " ")),
            "client_id": .string(grant.clientID), "username": .string(grant.username),
            "sub": .string(configuration.user(named: grant.username)?.sub ?? grant.username),
            "sid": .string(grant.sid), "iss": .string(grant.issuer), "iat": .number(Int(issued.timeIntervalSince1970)),
            "exp": .number(Int(expires.timeIntervalSince1970)),
        ]
    }

    private func isUsable(_ record: AccessRecord, at date: Date) -> Bool {
        guard !record.revoked, record.expiresAt > date, let grant = grants[record.grantID], !grant.revoked else {
            return false
        }
        return sessions[grant.sid]?.ended == false
    }

    /// The grant behind a valid access token, for userinfo and global sign-out.
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
        guard sessions[sid] != nil else { return nil }
        sessions[sid]?.ended = true
        for (id, grant) in grants where grant.sid == sid { revokeGrant(id) }
        for (secret, record) in deviceSecrets where record.sid == sid { deviceSecrets[secret]?.revoked = true }
        browserSessions = browserSessions.filter { $0.value != sid }
        return sessions[sid]?.journeySession
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

    // MARK: Helpers

    static func randomToken(bytes: Int) -> String {
        Data(SymmetricKey(size: SymmetricKeySize(bitCount: bytes * 8)).withUnsafeBytes { Array($0) }).base64URLEncoded
    }

    /// RFC 7636 §4.1: 43 to 128 characters from the unreserved set.
    static func isValidVerifier(_ verifier: String) -> Bool {
        (43...128).contains(verifier.count)
            && verifier.unicodeScalars.allSatisfy {
                CharacterSet.alphanumerics.contains($0) && $0.isASCII || "-._~".unicodeScalars.contains($0)
            }
    }
}

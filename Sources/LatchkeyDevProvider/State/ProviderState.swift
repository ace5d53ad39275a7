import Crypto
import Foundation

/// Everything the provider remembers: sessions, grants, tokens, codes. One actor, so that each
/// rule (rotation, replay detection, revocation cascades) is applied atomically. State is
/// changed before any suspension point, so a concurrent request never sees half a change.
actor ProviderState {
    let configuration: DevProviderConfiguration
    /// The configured clients and those registered since the provider started.
    nonisolated let clients: ClientDirectory
    /// When the provider started: its published documents' `Last-Modified`.
    nonisolated let started = Date()
    let keys: SigningKeys
    /// The lifetime of new access tokens, in seconds (the configuration's, until a test sets another).
    var accessTokenLifetime: Int
    /// The lifetime of new ID tokens, in seconds (the configuration's, until a test sets another).
    var idTokenLifetime: Int
    private(set) var issuer = ""
    let now: @Sendable () -> Date
    /// JWK objects (JSON text) published in the JWKS after the provider's own keys.
    var extraKeySetEntries: [String] = []

    var sessions: [String: Session] = [:]
    var browserSessions: [String: String] = [:]  // cookie value → sid
    var grants: [String: Grant] = [:]
    var accessTokens: [String: AccessRecord] = [:]  // jti → record
    var accessTokenIDs: [String: String] = [:]  // token → jti
    var refreshTokens: [String: RefreshRecord] = [:]
    /// Each grant's access token ids and refresh tokens, so that revoking a grant does not walk
    /// every token the provider ever issued.
    var grantTokens: [String: (jtis: [String], refreshTokens: [String])] = [:]
    var deviceSecrets: [String: DeviceSecretRecord] = [:]
    var codes: [String: AuthorizationCode] = [:]
    var deviceRequests: [String: DeviceRequest] = [:]  // device code → request
    var userCodes: [String: String] = [:]  // user code → device code
    /// DPoP (RFC 9449): the nonce proofs must carry, when `dpopNonceRotation` requires one
    /// (a new nonce after that many accepted proofs), and the proof ids already seen.
    var dpopNonceRotation: Int?
    var dpopNonce = ProviderState.randomToken(bytes: 12)
    var dpopNonceUses = 0
    var dpopChallengesToForce = 0
    var seenProofIDs: [String: Date] = [:]
    /// Back-channel logouts owed to clients for sessions that ended, until an endpoint sends them.
    var logoutNotices: [LogoutNotice] = []

    init(
        configuration: DevProviderConfiguration, signingKeys: DevProviderSigningKeys,
        now: @escaping @Sendable () -> Date
    ) async throws {
        self.configuration = configuration
        self.clients = ClientDirectory(configured: configuration.clients)
        self.now = now
        accessTokenLifetime = configuration.accessTokenLifetime
        idTokenLifetime = configuration.idTokenLifetime
        keys = try await SigningKeys(gracePeriod: TimeInterval(configuration.keyGracePeriod), initial: signingKeys)
    }

    func setIssuer(_ issuer: String) { self.issuer = issuer }

    func setAccessTokenLifetime(_ seconds: Int) { accessTokenLifetime = seconds }
    func setIDTokenLifetime(_ seconds: Int) { idTokenLifetime = seconds }
    func setExtraKeySetEntries(_ entries: [String]) { extraKeySetEntries = entries }

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
        _ code: String, client: DevProviderConfiguration.Client, redirectURI: String?, verifier: String?,
        issuer: String, jkt: String? = nil, audience: String? = nil
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
            sid: record.sid, jkt: jkt)
        codes[code]?.grantID = grantID
        return try await issueTokens(
            grantID: grantID, nonce: record.nonce, newDeviceSecret: true, audience: audience)
    }

    // MARK: Grants

    func passwordGrant(
        client: DevProviderConfiguration.Client, username: String, password: String, scopes: [String], issuer: String,
        jkt: String? = nil, audience: String? = nil
    ) async throws -> TokenAnswer {
        guard let user = checkPassword(username: username, password: password) else {
            throw OAuthFailure.invalidGrant("The username or password is wrong.")
        }
        let sid = startSession(username: user.username)
        let grantID = newGrant(
            issuer: issuer, clientID: client.clientID, username: user.username, scopes: scopes, sid: sid, jkt: jkt)
        return try await issueTokens(
            grantID: grantID, nonce: nil, newDeviceSecret: true, audience: audience,
            idToken: configuration.passwordGrantIssuesIDToken)
    }

    func refresh(
        _ refreshToken: String, client: DevProviderConfiguration.Client, scopes requested: [String]?, issuer: String,
        jkt: String? = nil, resource: String? = nil
    ) async throws -> TokenAnswer {
        guard let record = refreshTokens[refreshToken], let grant = grants[record.grantID],
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
        if let bound = grant.jkt, bound != jkt {
            // RFC 9449 §5: a bound refresh token goes only with a proof of its key; not spent.
            throw DPoPRefusal("The refresh token is bound to another DPoP key than the proof's (or no proof).")
                .atTokenEndpoint
        }
        guard !grant.revoked, record.expiresAt > now() else {
            throw OAuthFailure.invalidGrant("The refresh token has expired or was revoked.")
        }
        guard let session = sessions[grant.sid], !session.ended else {
            throw OAuthFailure.invalidGrant("The session of this refresh token has ended.")
        }
        if let requested {
            // RFC 6749 §6: this access token gets fewer scopes; the grant keeps its own.
            guard Set(requested).isSubset(of: grant.scopes) else {
                throw OAuthFailure.invalidScope("A refresh cannot add scopes to the grant.")
            }
        }
        if configuration.rotateRefreshTokens {
            refreshTokens[refreshToken]?.retired = true
        }
        return try await issueTokens(
            grantID: grant.id, nonce: nil, newDeviceSecret: false,
            keepRefreshToken: configuration.rotateRefreshTokens ? nil : refreshToken, scopes: requested,
            audience: resource, idToken: resource == nil)
    }

    /// `count` grants of `username` to `clientID`, each with a session and a refresh token only:
    /// no signing, no HTTP, for tests that need many live tokens at once.
    func mintRefreshTokens(count: Int, username: String, clientID: String, scopes: [String]) throws -> [String] {
        guard configuration.user(named: username) != nil, clients.client(clientID) != nil else {
            throw OAuthFailure.invalidRequest("There is no such user or client.")
        }
        let issued = now()
        return (0..<count).map { _ in
            let sid = startSession(username: username)
            let grantID = newGrant(issuer: issuer, clientID: clientID, username: username, scopes: scopes, sid: sid)
            return newRefreshToken(of: grantID, issued: issued)
        }
    }

    /// A new refresh token of `grantID`, recorded with the grant's tokens.
    func newRefreshToken(of grantID: String, issued: Date) -> String {
        let token = Self.randomToken(bytes: 32)
        refreshTokens[token] = RefreshRecord(
            grantID: grantID, expiresAt: issued.addingTimeInterval(TimeInterval(configuration.refreshTokenLifetime)),
            issuedAt: issued)
        grantTokens[grantID, default: ([], [])].refreshTokens.append(token)
        return token
    }

    func newGrant(
        issuer: String, clientID: String, username: String, scopes: [String], sid: String, jkt: String? = nil
    ) -> String {
        let id = Self.randomToken(bytes: 12)
        grants[id] = Grant(
            id: id, issuer: issuer, clientID: clientID, username: username, scopes: scopes, sid: sid, jkt: jkt)
        return id
    }

    /// Mints the tokens of a grant. State is recorded before signing (a suspension point), so a
    /// revocation that arrives meanwhile already covers them.
    func issueTokens(
        grantID: String, nonce: String?, newDeviceSecret: Bool, keepRefreshToken: String? = nil,
        scopes narrowed: [String]? = nil, audience: String? = nil, idToken: Bool = true
    ) async throws -> TokenAnswer {
        guard let grant = grants[grantID], let user = configuration.user(named: grant.username),
            let session = sessions[grant.sid], let client = clients.client(grant.clientID)
        else { throw OAuthFailure.invalidGrant("The grant is not valid.") }
        let issued = now()
        let jti = Self.randomToken(bytes: 12)
        let lifetime = accessTokenLifetime
        accessTokens[jti] = AccessRecord(
            grantID: grantID, expiresAt: issued.addingTimeInterval(TimeInterval(lifetime)), issuedAt: issued,
            scopes: narrowed, audience: audience)
        let scopes = narrowed ?? grant.scopes
        grantTokens[grantID, default: ([], [])].jtis.append(jti)
        var answer: TokenAnswer = [
            "token_type": .string(grant.jkt == nil ? "Bearer" : "DPoP"), "expires_in": .number(lifetime),
            "scope": .string(scopes.joined(separator: " ")),
        ]
        if grant.scopes.contains("offline_access") && client.grantTypes.contains("refresh_token") {
            if let keepRefreshToken {
                answer["refresh_token"] = .string(keepRefreshToken)
            } else {
                answer["refresh_token"] = .string(newRefreshToken(of: grantID, issued: issued))
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
        var accessClaims: [String: Claim] = [
            "iss": .string(grant.issuer), "sub": .string(user.sub), "aud": .string(audience ?? grant.issuer),
            "client_id": .string(client.clientID),
            "iat": .number(iat), "exp": .number(iat + lifetime), "jti": .string(jti),
            "scope": .string(scopes.joined(separator: " ")), "sid": .string(session.sid),
            "auth_time": .number(Int(session.authTime.timeIntervalSince1970)),
        ]
        if let jkt = grant.jkt { accessClaims["cnf"] = .object(["jkt": .string(jkt)]) }
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

    func idClaims(
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
        for (name, value) in user.numberClaims ?? [:] { claims[name] = .decimal(value) }
        return claims
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

import Foundation
import HTTPTypes
import Latchkey
import LatchkeyCommandLine
import NIOConcurrencyHelpers

/// The accounts of this machine's store: every token comes from the account's ``Credential``,
/// through the credential transaction (refreshed once for every caller and process). A
/// command's source opens the home at its first question (a command that ends before it asks
/// one, or asks only whether providers are configured, opens nothing) and keeps it for the
/// questions after (`api` asks whose tokens a URL takes, then sends); `latchkey agent`'s
/// answers through the session it holds open.
struct StoreAccountSource: AccountSource {
    let home: Home
    /// The session already open (the agent's); `nil` for a command's, opened when first asked.
    var opened: Session?
    /// A command's session, once its first question opened it.
    private let kept = NIOLockedValueBox<Session?>(nil)
    /// The account as the command named it (`LATCHKEY_ACCOUNT` and the default are the
    /// session's to apply).
    let reference: String?
    /// Whether a question that goes to the network first sends what the outbox holds that is
    /// due (a command's do; the agent's answers do not wait for it).
    var retriesOutbox = true
    /// Whether a validity asked for is capped at half the token's lifetime: the agent's are, as
    /// a remote asking for a token that outlasts its own life (`minimumValidity: 1e300`) would
    /// make every request a refresh.
    var capsValidity = false

    /// A command's source over `home`.
    init(home: Home, reference: String?) {
        self.home = home
        self.reference = reference
    }

    /// The agent's source over its open `session`.
    init(session: Session, reference: String?) {
        self.home = session.home
        self.opened = session
        self.reference = reference
        self.retriesOutbox = false
        self.capsValidity = true
    }

    func session() async throws -> Session {
        if let opened = opened ?? kept.withLockedValue({ $0 }) { return opened }
        let session = try await home.openStore()
        kept.withLockedValue { $0 = session }
        return session
    }

    /// The account, its handle, and its session; what is due in the outbox sent first when
    /// `network` says this question goes to the network.
    private func account(network: (StoredCredential) -> Bool = { _ in true }) async throws -> AccountContext {
        let session = try await session()
        let stored = try await session.account(reference)
        if retriesOutbox, network(stored) { await session.retryDueOutbox() }
        return AccountContext(session: session, stored: stored, credential: try await session.credential(stored))
    }

    /// `asked`, its validity capped where ``capsValidity`` says, by `token`'s lifetime.
    private func capped(_ asked: TokenAsk, by token: Token) -> TokenAsk {
        guard capsValidity, let validity = asked.minimumValidity else { return asked }
        var capped = asked
        let lifetime = token.expiresAt.map { $0.timeIntervalSince(token.issuedAt) } ?? 60
        capped.minimumValidity = validity.isNaN ? nil : min(max(validity, 0), lifetime / 2)
        return capped
    }

    func token(_ asked: TokenAsk) async throws -> TokenDescription {
        let context = try await account { capped(asked, by: $0.token).goesToNetwork(for: $0.token) }
        let asked = capped(asked, by: context.stored.token)
        let credential = context.credential
        let validity = asked.minimumValidity ?? 60
        let value: String
        do {
            if asked.force, !TokenAsk.refreshedJustBefore(context.stored) {
                try await credential.refresh(replacing: context.stored.token.accessToken)
            }
            if asked.idToken {
                value = try await credential.idToken(minimumValidity: validity)
            } else if asked.resource != nil || asked.scopes != nil {
                value = try await credential.accessToken(
                    for: asked.resourceURL, scopes: asked.scopes, minimumValidity: validity)
            } else if let minimumValidity = asked.minimumValidity {
                // Asked for explicitly: exactly that long.
                value = try await credential.accessToken(validFor: minimumValidity)
            } else {
                value = try await credential.accessToken()
            }
        } catch {
            if error.oauthError == .invalidTarget, let resource = asked.resourceURL {
                throw CLIError.resourceRefused(error, resource: resource, grant: try? await credential.token.resources)
            }
            throw CLIError.provider(error, doing: asked.idToken ? "No ID token" : "No access token")
        }
        return TokenDescription(
            token: value, idToken: asked.idToken, stored: try await credential.token, resource: asked.resourceURL,
            key: asked.key, account: context.stored.metadata.displayName ?? context.stored.id.rawValue)
    }

    func requestSender() async throws -> any AuthorizedRequestSender {
        try await account().credential
    }

    func authorization(for request: HTTPRequest, _ asked: TokenAsk, nonce: String?) async throws -> Authorization {
        let context = try await account()
        let credential = context.credential
        let asked = capped(asked, by: context.stored.token)
        if let nonce, let url = request.url { await credential.recordDPoPNonce(nonce, for: url) }
        let authorized: HTTPRequest
        do {
            authorized = try await credential.authorized(
                request, resource: asked.resourceURL, scopes: asked.scopes,
                minimumValidity: asked.minimumValidity ?? 60)
        } catch {
            throw CLIError.provider(error, doing: "No proof")
        }
        let token = try await credential.token
        let expiry =
            asked.resource != nil || asked.scopes != nil ? token.resourceTokens[asked.key]?.expiresAt : token.expiresAt
        return Authorization(
            authorization: authorized.headerFields[.authorization] ?? "",
            proof: authorized.headerFields.first { $0.name.canonicalName == "dpop" }?.value, expiresAt: expiry)
    }

    func userInfo() async throws -> [String: JSONValue] {
        let credential = try await account().credential
        do {
            return try await credential.userInfo()
        } catch {
            throw CLIError.provider(error, doing: "Userinfo failed")
        }
    }

    /// The server refused `accessToken`: the next token asked for is a new one.
    func reject(accessToken: String) async throws {
        let credential = try await account { _ in false }.credential
        do {
            try await credential.reject(accessToken: accessToken)
        } catch {
            throw CLIError.provider(error, doing: "The refused token could not be marked")
        }
    }

    func grantedScopes() async throws -> [String]? {
        try await account { _ in false }.stored.token.scopes ?? []
    }

    func reSignIn() async throws -> AccountReSignIn? {
        let context = try await account { _ in false }
        guard let provider = context.session.providerName(of: context.stored) else { return nil }
        let metadata = context.stored.metadata
        // What the provider said of the account, else what the user called it (not its id).
        let named = reference.flatMap { $0 == context.stored.id.rawValue || $0.isEmpty ? nil : $0 }
        return AccountReSignIn(provider: provider, loginHint: metadata.email ?? metadata.preferredUsername ?? named)
    }

    func trustBasis(resource: String?) async throws -> TrustBasis {
        let context = try await account { _ in false }
        return try await context.session.trustBasis(of: context.stored)
    }

    func hasProviders() async throws -> Bool {
        try await !home.providers().isEmpty
    }

    func gitAnswer(_ request: GitCredentialRequest, named: String?) async throws -> Session.GitAnswer {
        try await session().gitAnswer(request, named: named)
    }

    func gitErase(_ request: GitCredentialRequest, named: String?) async throws {
        try await session().gitErase(request, named: named)
    }
}

extension TokenAsk {
    /// Whether answering goes to the network, by the stored token: only then is the outbox
    /// sent first.
    func goesToNetwork(for token: Token) -> Bool {
        let validity = minimumValidity ?? 60
        if force { return true }
        if idToken { return token.idTokenExpiresAt.map { $0.timeIntervalSinceNow < validity } ?? true }
        guard resource != nil || scopes != nil else {
            return token.accessToken == nil || token.expires(within: validity)
        }
        return token.resourceTokens[key]?.isValid(for: validity, at: Date()) != true
    }

    /// When this process began (near enough): `--force` shares a refresh made just before.
    static let started = Date()

    /// Whether `stored`'s token came from a refresh (not the sign-in) in the two seconds before
    /// this process started: processes started at once with `--force` share that refresh, also
    /// those that read the store only after it ended.
    static func refreshedJustBefore(_ stored: StoredCredential) -> Bool {
        let token = stored.token
        return token.issuedAt > stored.createdAt.addingTimeInterval(1)
            && token.issuedAt > started.addingTimeInterval(-2)
    }
}

public import Foundation

/// A server step of a sign-out that could not be sent, waiting in the outbox to be sent again:
/// the revocation of one token, a global sign-out, the end of a provider session.
///
/// The secret it holds (the token to revoke; the tokens a global sign-out authenticates with;
/// the ID token an end-session request names) is sealed at rest like the store's tokens and is
/// never handed out as a credential: Latchkey only ever sends it to the provider for this
/// step. `description` never shows it.
public struct OutboxEntry: Sendable, Hashable, Identifiable, CustomStringConvertible {
    /// The entry's identifier.
    public let id: UUID
    /// The provider the step goes to.
    public var provider: ProviderIdentity
    /// What the step does.
    public var action: Action
    /// What the step sends, sealed by the storage: the token a revocation revokes, or the
    /// tokens a global sign-out or an end-session request is sent with. Package-only: nothing
    /// outside Latchkey can read it back.
    package var payload: Payload
    /// The account it belonged to, for reports.
    public var account: String?
    /// When the step no longer matters, as the provider stated it (the token's expiry); after
    /// that the entry is dropped. `nil` when nobody said: the entry stays until it goes through
    /// or is dropped on purpose.
    public var tokenExpiresAt: Date?
    /// When the step was first attempted.
    public var createdAt: Date
    /// Attempts so far.
    public var attempts: Int
    /// When the next attempt is due.
    public var nextAttemptAt: Date
    /// Why the last attempt failed, in words.
    public var lastError: String?
    /// Why the last attempt failed, as a value (an entry that failed for want of a registered
    /// provider is made due again once one is, say).
    public var failureCause: FailureCause?
    /// Whether the last failure was one a retry cannot fix (the provider refused the client or
    /// the token type, or no provider is registered): the entry is no longer tried, and stays
    /// listed, with ``lastError``, until it is dropped on purpose.
    public var failedPermanently: Bool
    /// The entry this one waits for: a sign-out's revocations wait for its global sign-out, which
    /// needs the tokens they would revoke. It is sent once that entry has gone through, was
    /// dropped, or failed permanently.
    public var waitsFor: UUID?

    /// What an entry does when it is sent.
    public struct Action: Sendable, Hashable, CustomStringConvertible {
        /// How the storage names it: a token kind's raw value for a revocation (as entries of
        /// earlier versions were named), `global_sign_out` or `end_session`.
        public let rawValue: String

        /// Creates an action from its stored name; `nil` for a name Latchkey does not know.
        public init?(rawValue: String) {
            guard TokenKind(rawValue: rawValue) != nil || Self.named.contains(rawValue) else { return nil }
            self.rawValue = rawValue
        }

        private init(name: String) { rawValue = name }

        private static let named: Set<String> = ["global_sign_out", "end_session"]

        /// Revokes one token (RFC 7009, or the provider's equivalent; a Ping session's logout).
        public static func revoke(_ kind: TokenKind) -> Action { Action(name: kind.rawValue) }
        /// The provider's global sign-out, with an access token, or one got with the refresh token.
        public static let globalSignOut = Action(name: "global_sign_out")
        /// RP-initiated logout: ends the provider session the ID token names.
        public static let endSession = Action(name: "end_session")

        /// The token kind a revocation revokes; `nil` for the other actions.
        public var revokedKind: TokenKind? { TokenKind(rawValue: rawValue) }

        /// The step's name in reports, as ``SignOutStep/Kind`` names it.
        public var description: String {
            switch self {
            case .globalSignOut: "global-signout"
            case .endSession: "end-session"
            default: revokedKind.map { SignOutStep.Kind.revoke($0).description } ?? rawValue
            }
        }
    }

    /// What an entry sends: one token, or a grant's tokens.
    package enum Payload: Sendable, Hashable {
        /// The token a revocation revokes.
        case token(String)
        /// The tokens a global sign-out or an end-session request is sent with.
        case grant(OutboxGrant)

        /// The token, for a revocation.
        package var token: String? { if case .token(let value) = self { value } else { nil } }
        /// The grant, for a global sign-out or an end-session request.
        package var grant: OutboxGrant? { if case .grant(let grant) = self { grant } else { nil } }
    }

    /// Why an entry's last attempt failed. Causes Latchkey does not know (from a newer version)
    /// are kept as they are.
    public struct FailureCause: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        /// How the storage names it.
        public let rawValue: String

        /// A cause by its stored name.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// No provider was registered for the entry's issuer and client: it is made due again
        /// once one is.
        public static let noProvider = FailureCause(rawValue: "no_provider")
        /// The provider refused the step in a way a retry cannot fix (a 403, an unknown client).
        public static let refused = FailureCause(rawValue: "refused")
        /// The provider could not be reached, or failed for now (a retry can fix it).
        public static let unavailable = FailureCause(rawValue: "unavailable")
        /// The step was not sent: it waits for another (the global sign-out it would kill).
        public static let heldBack = FailureCause(rawValue: "held_back")

        public var description: String { rawValue }
    }

    /// Creates an entry. Only Latchkey's own code and storage backends create entries.
    package init(
        id: UUID = UUID(), provider: ProviderIdentity, action: Action, payload: Payload, account: String?,
        tokenExpiresAt: Date?, createdAt: Date, attempts: Int, nextAttemptAt: Date, lastError: String?,
        failureCause: FailureCause? = nil, failedPermanently: Bool = false, waitsFor: UUID? = nil
    ) {
        self.id = id
        self.provider = provider
        self.action = action
        self.payload = payload
        self.failureCause = failureCause
        self.account = account
        self.tokenExpiresAt = tokenExpiresAt
        self.createdAt = createdAt
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.lastError = lastError
        self.failedPermanently = failedPermanently
        self.waitsFor = waitsFor
    }

    /// The action, account, provider and where its delivery stands: never the token or grant.
    public var description: String {
        let state = failedPermanently ? "failed permanently" : "next: \(nextAttemptAt.formatted(.iso8601))"
        return "OutboxEntry(\(action) of \(account ?? "unknown") at \(provider), attempts: \(attempts), \(state))"
    }
}

extension OutboxEntry: CustomDebugStringConvertible, CustomReflectable {
    /// Same as `description`: the token is never shown.
    public var debugDescription: String { description }

    /// A mirror without the token, so `dump(entry)` cannot print it either.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "id": id, "provider": provider, "action": action, "account": account as Any,
                "tokenExpiresAt": tokenExpiresAt as Any, "createdAt": createdAt, "attempts": attempts,
                "nextAttemptAt": nextAttemptAt, "lastError": lastError as Any, "failureCause": failureCause as Any,
                "failedPermanently": failedPermanently,
                "waitsFor": waitsFor as Any,
            ],
            displayStyle: .struct)
    }
}

/// The tokens a queued global sign-out or end-session request is sent with, sealed in its
/// outbox entry as JSON. Never handed out as a credential.
package struct OutboxGrant: Sendable, Hashable, Codable {
    package var accessToken: String?
    package var accessTokenExpiresAt: Date?
    package var refreshToken: String?
    package var idToken: String?
    package var tokenType: String
    /// The key the tokens are bound to (DPoP), sealed with them: without it a bound refresh
    /// token gets no access token to sign out with.
    package var dpopThumbprint: String?
    package var dpopKey: String?

    package init(_ token: Token) {
        accessToken = token.accessToken
        accessTokenExpiresAt = token.expiresAt
        refreshToken = token.refreshToken
        idToken = token.idToken
        tokenType = token.tokenType
        dpopThumbprint = token.dpop?.thumbprint
        dpopKey = token.dpop?.key.map { Base64URL.encode($0.rawRepresentation) }
    }

    /// The grant after a refresh `answer`: its new tokens; or, for an answer refused as a whole,
    /// this grant with the refresh token the answer rotated (the only live one) and no access
    /// token (the one kept was already refused or expired).
    package func answered(by answer: RefreshAnswer) -> OutboxGrant {
        switch answer {
        case .token(let fresh):
            return OutboxGrant(fresh)
        case .refused(_, let rotated):
            var kept = self
            kept.refreshToken = rotated
            kept.accessToken = nil
            kept.accessTokenExpiresAt = nil
            return kept
        }
    }

    /// The grant as a ``Token`` of `provider`, to refresh with.
    package func token(of provider: ProviderIdentity, issuedAt: Date) -> Token {
        Token(
            accessToken: accessToken, tokenType: tokenType, refreshToken: refreshToken, idToken: idToken,
            issuedAt: issuedAt, expiresAt: accessTokenExpiresAt, provider: provider,
            dpop: dpopThumbprint.map { thumbprint in
                DPoPBinding(
                    thumbprint: thumbprint,
                    key: dpopKey.flatMap { Base64URL.decode($0) }.flatMap { DPoPKey(rawRepresentation: $0) })
            })
    }

    /// The JSON text the entry seals.
    package var sealedText: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .secondsSince1970
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// The grant an entry sealed; `nil` when its text is not one.
    package init?(sealedText: String) {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        guard let grant = try? decoder.decode(OutboxGrant.self, from: Data(sealedText.utf8)) else { return nil }
        self = grant
    }
}

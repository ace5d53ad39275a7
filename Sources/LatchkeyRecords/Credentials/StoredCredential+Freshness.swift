import Crypto

#if canImport(FoundationEssentials)
    package import FoundationEssentials
#else
    package import Foundation
#endif

/// What a refresh is for: when the stored credential already has it (another caller or process
/// refreshed meanwhile), the refresh is not sent.
package enum RefreshNeed: Sendable, Hashable {
    /// A refresh asked for explicitly: always sent.
    case always
    /// An access token valid for this many seconds.
    case accessToken(TimeInterval)
    /// An ID token valid for this many seconds.
    case idToken(TimeInterval)
    /// An access token valid for this many seconds, with no cap at half its lifetime, or any
    /// access token other than the one the caller saw (its fingerprint): another caller or
    /// process refreshed meanwhile, and its token is taken even when it lives shorter, so that
    /// many callers make one refresh.
    case accessTokenFor(TimeInterval, seen: String?)
    /// An access token other than the one the caller saw: a forced refresh that many callers
    /// at once make once.
    case newAccessToken(seen: String?)
}

extension StoredCredential {
    /// Whether the access token must be refreshed before it is handed out: it expires within
    /// `minimumValidity` seconds at `date` (half its lifetime, for tokens that live less than
    /// twice that), or a resource server rejected it.
    package func needsRefresh(minimumValidity: TimeInterval, at date: Date) -> Bool {
        if let rejected = state.rejectedAccessToken, let accessToken = token.accessToken,
            rejected == Self.fingerprint(accessToken)
        {
            return true
        }
        var margin = minimumValidity
        if let expiresAt = token.expiresAt {
            margin = min(margin, expiresAt.timeIntervalSince(token.issuedAt) / 2)
        }
        return token.expires(within: margin, at: date)
    }

    /// The access token, when it can be handed out at `date` as it is: it does not need a
    /// refresh within `minimumValidity` (see ``needsRefresh(minimumValidity:at:)``).
    /// `accessToken()`'s rule, and the tool's quick `latchkey token`'s.
    package func accessToken(minimumValidity: TimeInterval, at date: Date) -> String? {
        guard let accessToken = token.accessToken, !needsRefresh(minimumValidity: minimumValidity, at: date) else {
            return nil
        }
        return accessToken
    }

    /// The access token, when it stays valid for `seconds` exactly at `date` (no cap at half
    /// its lifetime) and no resource server rejected it: `accessToken(validFor:)`'s rule.
    package func accessToken(validFor seconds: TimeInterval, at date: Date) -> String? {
        guard let accessToken = token.accessToken, !token.expires(within: seconds, at: date),
            !needsRefresh(minimumValidity: 0, at: date)
        else { return nil }
        return accessToken
    }

    /// The ID token, when it stays valid for `minimumValidity` at `date`: `idToken()`'s rule.
    package func idToken(minimumValidity: TimeInterval, at date: Date) -> String? {
        guard let idToken = token.idToken, satisfies(.idToken(minimumValidity), at: date) else { return nil }
        return idToken
    }

    /// Whether the credential already has what `need` asks for at `date`.
    package func satisfies(_ need: RefreshNeed, at date: Date) -> Bool {
        switch need {
        case .always:
            return false
        case .accessToken(let minimumValidity):
            return token.accessToken != nil && !needsRefresh(minimumValidity: minimumValidity, at: date)
        case .idToken(let minimumValidity):
            return token.idTokenExpiresAt.map { $0.timeIntervalSince(date) >= minimumValidity } ?? false
        case .accessTokenFor(let seconds, let seen):
            guard let accessToken = token.accessToken, !needsRefresh(minimumValidity: 0, at: date) else { return false }
            return Self.fingerprint(accessToken) != seen || !token.expires(within: seconds, at: date)
        case .newAccessToken(let seen):
            return token.accessToken.map { Self.fingerprint($0) != seen } ?? false
        }
    }

    /// A fingerprint of an access token for the store's clear columns: half of its SHA-256, in
    /// hex, from which the token cannot be found.
    package static func fingerprint(_ accessToken: String) -> String {
        let digits = Array("0123456789abcdef")
        return String(
            SHA256.hash(data: Data(accessToken.utf8)).prefix(16).flatMap {
                [digits[Int($0 >> 4)], digits[Int($0 & 15)]]
            })
    }
}

#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// What `latchkey agent` answers: one JSON object on one line. A failure carries what went
/// wrong and what to do; a success the token (or the headers, or the claims) asked for.
public struct AgentAnswer: Sendable, Codable, Hashable {
    /// Why a request was not answered.
    public enum Failure: String, Sendable, Codable, Hashable {
        /// The socket's limits do not allow it, or its use was not confirmed.
        case refused
        /// The account must sign in again (on the agent's machine).
        case signInRequired = "sign-in-required"
        /// No such account.
        case notFound = "not-found"
        /// The provider could not be reached.
        case unreachable
        /// The agent has as many connections as it takes.
        case busy
        /// The request could not be read.
        case invalid
        /// Anything else.
        case failed
    }

    /// Why it was not answered; `nil` when it was.
    public var failure: Failure?
    /// What went wrong, for a person: never a token.
    public var message: String?
    /// The account the answer is for (its display name).
    public var account: String?
    /// The issuer of the account's provider.
    public var issuer: String?
    /// The token asked for.
    public var token: String?
    /// Its type (`Bearer`, `DPoP`).
    public var tokenType: String?
    /// When it expires.
    public var expiresAt: Date?
    /// Its scopes.
    public var scopes: [String]?
    /// ``AgentRequest/Operation/authorize``: the `Authorization` header's value.
    public var authorization: String?
    /// ``AgentRequest/Operation/authorize``: the `DPoP` header's value, for a bound token.
    public var proof: String?
    /// ``AgentRequest/Operation/userInfo``: the claims.
    public var claims: [String: JSONValue]?
    /// ``AgentRequest/Operation/describe``: the resources the user paired with the account's
    /// provider (a provider added for them, a sign-in for them, a socket limited to them).
    public var resources: [String]?

    /// Creates an answer.
    public init(
        failure: Failure? = nil, message: String? = nil, account: String? = nil, token: String? = nil,
        tokenType: String? = nil, expiresAt: Date? = nil, scopes: [String]? = nil, authorization: String? = nil,
        proof: String? = nil, claims: [String: JSONValue]? = nil
    ) {
        self.failure = failure
        self.message = message
        self.account = account
        self.token = token
        self.tokenType = tokenType
        self.expiresAt = expiresAt
        self.scopes = scopes
        self.authorization = authorization
        self.proof = proof
        self.claims = claims
    }

    /// A failure.
    public static func failed(_ failure: Failure, _ message: String) -> AgentAnswer {
        AgentAnswer(failure: failure, message: message)
    }
}

extension AgentAnswer: CustomStringConvertible {
    /// The failure and its message, or what the answer holds: never a token or a claim.
    public var description: String {
        if let failure { return "\(failure.rawValue): \(message ?? "")" }
        let held = [
            token.map { _ in "a token" }, authorization.map { _ in "an authorization" }, proof.map { _ in "a proof" },
            claims.map { "\($0.count) claims" },
        ].compactMap { $0 }
        return "answered with " + (held.isEmpty ? "nothing" : held.joined(separator: ", "))
    }
}

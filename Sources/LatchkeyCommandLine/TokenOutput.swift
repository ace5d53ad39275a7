package import LatchkeyRecords

/// How long a token must stay valid: seconds, or a number with `s`, `m` or `h`.
package struct TokenValidity: Sendable, Hashable {
    package let seconds: TimeInterval

    package init(seconds: TimeInterval) { self.seconds = seconds }

    /// `90`, `90s`, `5m`, `1h`; `nil` for anything else, or over 30 days.
    package init?(text: String) {
        let text = CLINumbers.trimmingBlanks(text).lowercased()
        let units: [(String, Double)] = [("h", 3_600), ("m", 60), ("s", 1)]
        let (number, factor) =
            units.first { text.hasSuffix($0.0) }.map { (String(text.dropLast()), $0.1) } ?? (text, 1)
        guard let value = Double(number), value.isFinite, value >= 0, value * factor <= 30 * 86_400 else { return nil }
        seconds = value * factor
    }
}

/// What `latchkey token` prints.
package enum TokenFormat: String, CaseIterable, Sendable {
    case token, json, export
    /// A JSON object of HTTP headers (`{"Authorization": "Bearer …"}`), the shape MCP hosts'
    /// header-helper hooks read.
    case headers
}

/// A token with what the JSON and `export` formats tell of it.
package struct TokenDescription {
    package let token: String
    package let idToken: Bool
    package let stored: Token
    package let resource: URL?
    package let key: String
    package let account: String

    package init(token: String, idToken: Bool, stored: Token, resource: URL?, key: String, account: String) {
        self.token = token
        self.idToken = idToken
        self.stored = stored
        self.resource = resource
        self.key = key
        self.account = account
    }

    /// The access token's (or resource token's) expiry, or the ID token's.
    package var expiresAt: Date? {
        if idToken { return stored.idTokenExpiresAt }
        if let resourceToken { return resourceToken.expiresAt }
        return stored.expiresAt
    }

    /// Whether the token is an access token bound to the account's key (DPoP): it goes with a
    /// proof, and no fixed header (git's password, kubectl's token, `--format headers`) can
    /// carry it.
    package var isBoundToKey: Bool { !idToken && (stored.dpop != nil || stored.tokenType.lowercased() == "dpop") }

    /// The scopes the token carries (a resource token's own), space separated.
    package var scope: String? {
        if let resourceToken {
            return resourceToken.scopes?.joined(separator: " ") ?? resourceToken.requestedScopes?.joined(separator: " ")
        }
        return stored.scope
    }

    /// The `json` format's object.
    package var fields: [String: JSONValue] {
        var fields: [String: JSONValue] = [
            "token": .string(token), "type": .string(idToken ? "id_token" : "access_token"),
            "issuer": .string(stored.provider.issuer), "account": .string(account),
        ]
        if !idToken {
            fields["accessToken"] = .string(token)
            fields["tokenType"] = .string(isBoundToKey ? "DPoP" : "Bearer")
        }
        if let expiresAt { fields["expiresAt"] = .string(expiresAt.formatted(.iso8601)) }
        if let scope { fields["scope"] = .string(scope) }
        if let resource { fields["resource"] = .string(resource.absoluteString) }
        if let resources = stored.resources { fields["grantResources"] = .array(resources.map(JSONValue.string)) }
        return fields
    }

    /// The HTTP headers a request with the token carries (a bearer token's: a DPoP-bound token
    /// needs a proof for each request, which `latchkey api` and `latchkey proof` make).
    package var headers: [String: JSONValue] {
        ["Authorization": .string("Bearer \(token)")]
    }

    /// `export NAME='VALUE'` lines for `eval "$(latchkey token --format export)"`.
    package var exportLines: [String] {
        var lines = [(idToken ? "LATCHKEY_ID_TOKEN" : "LATCHKEY_ACCESS_TOKEN", token)]
        if let expiresAt { lines.append(("LATCHKEY_TOKEN_EXPIRES_AT", expiresAt.formatted(.iso8601))) }
        lines.append(("LATCHKEY_TOKEN_ISSUER", stored.provider.issuer))
        return lines.map { "export \($0.0)=\(Self.quoted($0.1))" }
    }

    /// The resource token this is, when it is one (RFC 8707).
    private var resourceToken: ResourceToken? {
        guard !idToken, let resourceToken = stored.resourceTokens[key], resourceToken.accessToken == token else {
            return nil
        }
        return resourceToken
    }

    /// `value` in single quotes for a POSIX shell.
    package static func quoted(_ value: String) -> String {
        "'" + value.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    }
}

import LatchkeyRecords

/// Whether a git host gets a token, and from which provider: decided once, from git's request
/// and the configured providers, before any account or token is looked at — by the quick path,
/// the full tool and `latchkey agent` alike (a remote asking through the agent names the host,
/// and the agent decides with its own providers). A pure value, tested without a store.
package enum GitHostRule: Sendable {
    /// `provider` answers for the host.
    case provider(ProviderEntry)
    /// No provider names the host: no answer, and git asks its other helpers.
    case unknownHost
    /// The host is named, but git asks over plain http to another machine, and the provider was
    /// not added with `--git-allow-http`: a token sent so is read by anyone on the path.
    case plainHTTP(host: String)
    /// Not a question a token answers: a protocol other than http(s), or no host.
    case notHTTP

    /// The rule for `request` among `providers`.
    package static func decide(_ request: GitCredentialRequest, providers: [ProviderEntry]) -> GitHostRule {
        guard let host = request.host, let scheme = request.protocol, ["http", "https"].contains(scheme) else {
            return .notHTTP
        }
        guard let entry = providers.first(where: { $0.gitHosts?.contains(host) == true }) else { return .unknownHost }
        if scheme == "http", !EndpointSecurity.isLoopback(host: request.hostName), entry.gitAllowsHTTP != true {
            return .plainHTTP(host: host)
        }
        return .provider(entry)
    }

    /// What a person is told when no token is given for the host; `nil` where git just asks
    /// its other helpers.
    package var refusal: String? {
        switch self {
        case .plainHTTP(let host):
            "No token for \(TerminalText.safe(host)) over plain http: git would send it in the clear. Use https, or add the provider with --git-allow-http."
        case .unknownHost, .notHTTP, .provider: nil
        }
    }
}

extension GitCredentialRequest {
    /// A request for `url`: `protocol://[username@]host[:port]`, as git's own `url` attribute
    /// names them, and as a remote names git's question to the agent; `nil` for anything else
    /// (a path, a query, a password, an unescaped `@` in the username).
    package init?(url: String) {
        guard url.filter({ $0 == "@" }).count <= 1, let parts = URLComponents(string: url), let scheme = parts.scheme,
            let host = parts.percentEncodedHost, !host.isEmpty, parts.percentEncodedPath.isEmpty, parts.query == nil,
            parts.fragment == nil, parts.password == nil
        else { return nil }
        self.init()
        fields = ["protocol": scheme, "host": host + (parts.port.map { ":\($0)" } ?? "")]
        fields["username"] = parts.user
    }

    /// `protocol://[username@]host`: how a remote names git's question to the agent (the
    /// username percent-encoded by `URLComponents`).
    package var url: String? {
        guard let scheme = self.protocol, let host else { return nil }
        var user = URLComponents()
        user.user = fields["username"]
        return "\(scheme)://" + (user.percentEncodedUser.map { $0 + "@" } ?? "") + host
    }
}

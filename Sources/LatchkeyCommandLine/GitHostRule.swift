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
    /// A request for `url`: `protocol://[username@]host`, as git's own `url` attribute names
    /// them, and as a remote names git's question to the agent; `nil` for anything else.
    package init?(url: String) {
        let parts = url.split(separator: "://", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        let scheme = String(parts[0])
        var host = String(parts[1])
        var username: String?
        if let at = host.firstIndex(of: "@") {
            username = Self.percentDecoded(host[..<at])
            host = String(host[host.index(after: at)...])
            guard username != nil else { return nil }
        }
        let forbidden: Set<Character> = ["/", "@", "\n", "\r", "\0", "?", "#"]
        guard !scheme.isEmpty, !host.isEmpty, !host.contains(where: forbidden.contains) else { return nil }
        self.init()
        fields = ["protocol": scheme, "host": host]
        fields["username"] = username
    }

    /// `protocol://[username@]host`: how a remote names git's question to the agent.
    package var url: String? {
        guard let scheme = self.protocol, let host else { return nil }
        let user = fields["username"].map(Self.percentEncoded)
        return "\(scheme)://" + (user.map { $0 + "@" } ?? "") + host
    }

    /// `text` with every byte but RFC 3986's unreserved ones as `%XX`.
    private static func percentEncoded(_ text: String) -> String {
        let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        for byte in text.utf8 {
            if unreserved.contains(byte) {
                bytes.append(byte)
            } else {
                bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `text` with its `%XX` escapes read back; `nil` when one is broken or the bytes are not
    /// UTF-8.
    private static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next(), let low = iterator.next(),
                let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
            else { return nil }
            bytes.append(value)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

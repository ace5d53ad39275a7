#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// Where Latchkey sends tokens: https everywhere, plain http only to the loopback interface.
public enum EndpointSecurity {
    /// Whether `url` is an acceptable endpoint: one a request can go to, https, or http to the
    /// loopback interface.
    public static func isAcceptable(_ url: URL) -> Bool {
        guard isRequestTarget(url), let scheme = url.scheme?.lowercased(), let host = url.host else { return false }
        if scheme == "https" { return true }
        return scheme == "http" && isLoopback(host: host)
    }

    /// Whether a request can be sent to `url` at all: an absolute http or https URL with a host,
    /// which the URL parser gives back in one piece. A relative or scheme-less URL (`jwks`,
    /// `//host/x`, `not a url`) is not: HTTP request types trap on one, so every URL that comes
    /// from outside is checked with this before it becomes a request.
    public static func isRequestTarget(_ url: URL) -> Bool {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = url.host, !host.isEmpty,
            let components = URLComponents(url: url, resolvingAgainstBaseURL: true),
            components.scheme != nil, components.host != nil, components.string != nil
        else { return false }
        return true
    }

    /// Whether `host` names the loopback interface: `localhost`, an address in 127.0.0.0/8, or
    /// `::1`. Names under `.localhost` are not: a resolver need not keep them on this machine.
    public static func isLoopback(host: String) -> Bool {
        var bare = Substring(host)
        while bare.first == "[" { bare.removeFirst() }
        while bare.last == "]" { bare.removeLast() }
        let host = bare.lowercased()
        if host == "localhost" || host == "::1" || host == "0:0:0:0:0:0:0:1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127"
            && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isASCII) && UInt8($0) != nil }
    }
}

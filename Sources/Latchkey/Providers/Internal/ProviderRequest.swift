package import Foundation
import HTTPTypes

/// One request to a provider, described once, whatever the provider: the endpoint it goes to,
/// the HTTP request, its body, and every secret it carries (never to appear in an error's text
/// or a log line). Each provider only builds these and names its refusal
/// (``ProviderWire/refusal``); sending, logging, tracing, the deadline and the size cap are the
/// wire's.
struct ProviderRequest: Sendable {
    /// The endpoint, for errors, logs, metrics and spans.
    var endpoint: EndpointKind
    var http: HTTPRequest
    var body: Data?
    /// Every secret the request carries: redacted from whatever the provider answers.
    var secrets: [String]
    /// The provider's name for the operation, when its wire protocol has one (Cognito's
    /// `X-Amz-Target`), for its refusals.
    var operation: String?
    /// The DPoP proof the request carries, when the credential is bound to a key (RFC 9449).
    var proof: DPoPSigning?

    init(
        _ endpoint: EndpointKind, _ http: HTTPRequest, body: Data? = nil, secrets: [String] = [],
        operation: String? = nil
    ) {
        self.endpoint = endpoint
        self.http = http
        self.body = body
        self.secrets = secrets
        self.operation = operation
    }

    /// A `GET`, with a bearer token when given.
    static func get(_ endpoint: EndpointKind, _ url: URL, bearer: String? = nil, secrets: [String] = [])
        throws(ProviderError) -> Self
    {
        var http = try HTTPRequest.checked(.get, url, endpoint: endpoint)
        http.headerFields[.accept] = "application/json"
        if let bearer { http.headerFields[.authorization] = "Bearer \(bearer)" }
        return ProviderRequest(endpoint, http, secrets: secrets + [bearer].compactMap { $0 })
    }

    /// A form `POST` (RFC 6749 Appendix B) with the client's authentication (RFC 6749 §2.3) and,
    /// when given, a bearer token.
    static func form(
        _ endpoint: EndpointKind, _ url: URL, _ fields: [(String, String)], clientID: String,
        authentication: ClientAuthentication?, bearer: String? = nil, secrets: [String] = []
    ) throws(ProviderError) -> Self {
        var fields = fields
        var headers: [(String, String)] = []
        authentication?.apply(clientID: clientID, form: &fields, headers: &headers)
        var http = try HTTPRequest.checked(.post, url, endpoint: endpoint)
        http.headerFields[.accept] = "application/json"
        http.headerFields[.contentType] = "application/x-www-form-urlencoded"
        for (name, value) in headers {
            if let field = HTTPField.Name(name) { http.headerFields[field] = value }
        }
        if let bearer { http.headerFields[.authorization] = "Bearer \(bearer)" }
        return ProviderRequest(
            endpoint, http, body: FormEncoding.encode(fields),
            secrets: secrets + [bearer, authentication?.secret].compactMap { $0 })
    }

    /// A JSON `POST` of `body` (AWS JSON 1.1, AM's REST API; an empty body when `nil`) with the
    /// headers given.
    static func json(
        _ endpoint: EndpointKind, _ url: URL, _ body: JSONValue?, contentType: String = "application/json",
        headers: [HTTPField.Name: String] = [:], secrets: [String] = [], operation: String? = nil
    ) throws(ProviderError) -> Self {
        var http = try HTTPRequest.checked(.post, url, endpoint: endpoint)
        http.headerFields[.accept] = "application/json"
        http.headerFields[.contentType] = contentType
        for (name, value) in headers { http.headerFields[name] = value }
        let data: Data
        do {
            data = try body.map { try JSONEncoder().encode($0) } ?? Data()
        } catch {
            throw ProviderError(.invalidResponse, endpoint: endpoint, reason: "The request could not be encoded.")
        }
        return ProviderRequest(endpoint, http, body: data, secrets: secrets, operation: operation)
    }
}

extension HTTPRequest {
    /// A request to `url`, which must be one a request can go to (``EndpointSecurity/isRequestTarget(_:)``):
    /// a URL from a provider's metadata, the configuration or the command line that is relative
    /// or has no scheme is a typed error naming it, never a trap.
    static func checked(_ method: Method, _ url: URL, endpoint: EndpointKind?) throws(ProviderError) -> Self {
        guard EndpointSecurity.isRequestTarget(url) else { throw .unusableURL(url, endpoint: endpoint) }
        return HTTPRequest(method: method, url: url)
    }
}

extension ProviderError {
    /// A URL no request can be sent to.
    package static func unusableURL(_ url: URL, endpoint: EndpointKind?, named name: String? = nil) -> ProviderError {
        let text = url.absoluteString.count > 200 ? String(url.absoluteString.prefix(200)) + "…" : url.absoluteString
        let what = name.map { "\($0) " } ?? endpoint.map { "the \($0) endpoint " } ?? ""
        return ProviderError(
            .invalidEndpoint, endpoint: endpoint,
            reason: "\(what)\"\(text)\" is not an absolute http(s) URL with a host; nothing was sent.")
    }
}

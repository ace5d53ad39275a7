import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// An OAuth error answer (RFC 6749 §5.2, RFC 6750 §3): a JSON body with `error` and
/// `error_description`, `Cache-Control: no-store`, the status the RFC names and, for client
/// authentication and bearer token failures, a `WWW-Authenticate` challenge.
struct OAuthFailure: Error, HTTPResponseError {
    var error: String
    var description: String
    var status: HTTPResponse.Status
    var challenge: String?
    /// The nonce the next DPoP proof must carry (RFC 9449 §8), sent as `DPoP-Nonce`.
    var dpopNonce: String?

    init(_ error: String, _ description: String, status: HTTPResponse.Status = .badRequest, challenge: String? = nil) {
        self.error = error
        self.description = description
        self.status = status
        self.challenge = challenge
    }

    static func invalidRequest(_ description: String) -> OAuthFailure { .init("invalid_request", description) }
    static func invalidGrant(_ description: String) -> OAuthFailure { .init("invalid_grant", description) }
    static func invalidScope(_ description: String) -> OAuthFailure { .init("invalid_scope", description) }
    static func unauthorizedClient(_ description: String) -> OAuthFailure { .init("unauthorized_client", description) }

    /// A client that failed to authenticate (RFC 6749 §5.2: 401 with a challenge).
    static func invalidClient(_ description: String) -> OAuthFailure {
        .init("invalid_client", description, status: .unauthorized, challenge: #"Basic realm="latchkey-dev""#)
    }

    /// A bearer token that is missing (no error code, RFC 6750 §3.1) or not valid.
    static func invalidToken(_ description: String?) -> OAuthFailure {
        guard let description else {
            return .init(
                "invalid_request", "No bearer token.", status: .unauthorized, challenge: #"Bearer realm="latchkey-dev""#
            )
        }
        return .init(
            "invalid_token", description, status: .unauthorized,
            challenge: #"Bearer realm="latchkey-dev", error="invalid_token", error_description="\#(description)""#)
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = Reply.json(["error": error, "error_description": description], status: status)
        if let challenge { response.headers[.wwwAuthenticate] = challenge }
        if let dpopNonce, let name = HTTPField.Name("DPoP-Nonce") { response.headers[name] = dpopNonce }
        return response
    }
}

/// Builders for the provider's answers.
enum Reply {
    /// A JSON answer that must not be cached (RFC 6749 §5.1).
    static func json(_ object: Any, status: HTTPResponse.Status = .ok) -> Response {
        let data =
            (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
            ?? Data("{}".utf8)
        var headers: HTTPFields = [.contentType: "application/json", .cacheControl: "no-store"]
        if let pragma = HTTPField.Name("Pragma") { headers[pragma] = "no-cache" }
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// A JSON answer of an `Encodable` value.
    static func encoded(_ value: some Encodable, status: HTTPResponse.Status = .ok) -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        var headers: HTTPFields = [.contentType: "application/json", .cacheControl: "no-store"]
        if let pragma = HTTPField.Name("Pragma") { headers[pragma] = "no-cache" }
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func html(_ body: String, status: HTTPResponse.Status = .ok) -> Response {
        let page = """
            <!doctype html><html><head><meta charset="utf-8"><title>Latchkey development provider</title></head>
            <body>\(body)</body></html>
            """
        return Response(
            status: status,
            headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: page)))
    }

    static func redirect(_ location: String) -> Response {
        Response(status: .found, headers: [.location: location, .cacheControl: "no-store"])
    }

    /// `url` with `parameters` added to its query.
    static func url(_ base: String, adding parameters: [(String, String?)]) -> String {
        guard var components = URLComponents(string: base) else { return base }
        var items = components.queryItems ?? []
        for (name, value) in parameters { if let value { items.append(URLQueryItem(name: name, value: value)) } }
        components.queryItems = items
        // URLComponents leaves "+" alone in queries; encode it so it is not read as a space.
        components.percentEncodedQuery = components.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
        return components.string ?? base
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}

/// The parameters of a form body or a query string. RFC 6749 §3.1: a parameter sent more than
/// once makes the request invalid.
struct Parameters: Sendable {
    private(set) var values: [String: String] = [:]
    private(set) var repeated: Set<String> = []

    /// Throws `invalid_request` when a percent escape in `encoded` is malformed.
    init(encoded: String) throws(OAuthFailure) {
        guard let pairs = FormEncoding.pairs(encoded) else {
            throw .invalidRequest("The parameters are not valid form encoding (a malformed percent escape).")
        }
        for (name, value) in pairs {
            if values[name] != nil { repeated.insert(name) }
            values[name] = value
        }
    }

    /// The form body of `request` (at most 64 KiB), or its query string for `GET`.
    static func of(_ request: Request) async throws -> Parameters {
        if request.method == .get || request.method == .head {
            return try Parameters(encoded: request.uri.query ?? "")
        }
        let contentType = request.headers[.contentType] ?? ""
        let body = try await request.body.collect(upTo: 65_536)
        guard contentType.lowercased().hasPrefix("application/x-www-form-urlencoded") else {
            if body.readableBytes == 0 { return try Parameters(encoded: request.uri.query ?? "") }
            throw OAuthFailure.invalidRequest("The body must be application/x-www-form-urlencoded.")
        }
        return try Parameters(encoded: String(buffer: body))
    }

    /// A parameter's value; empty values count as absent. Throws when it was sent twice.
    subscript(_ name: String) -> String? {
        get throws {
            if repeated.contains(name) { throw OAuthFailure.invalidRequest("The parameter \(name) is repeated.") }
            guard let value = values[name], !value.isEmpty else { return nil }
            return value
        }
    }

    func required(_ name: String) throws -> String {
        guard let value = try self[name] else { throw OAuthFailure.invalidRequest("The parameter \(name) is missing.") }
        return value
    }
}

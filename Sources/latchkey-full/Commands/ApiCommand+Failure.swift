import Foundation
import HTTPTypes
import Latchkey
import LatchkeyCommandLine

/// What `latchkey api` says on standard error when the server answered with a status that is
/// not 2xx: the status, the server's own reason (a `WWW-Authenticate` challenge's error, or the
/// body's `error`, `error_description` or `message`), and what to do. A pure value of the
/// answer, so the wording is decided in one place.
struct APIFailure: Sendable, Equatable {
    /// The one line, without the tool's `latchkey: ` prefix.
    var message: String

    /// The summary of an answer whose status is `status`, to a request for `url`.
    init(status: HTTPResponse.Status, headers: HTTPFields, body: Data, url: URL? = nil) {
        let challenges = AuthenticationChallenge.parse(headers[values: .wwwAuthenticate])
            .filter { ["bearer", "dpop"].contains($0.scheme) }
        let challenge = challenges.first { $0.error != nil } ?? challenges.first
        let error = challenge?.error?.rawValue ?? Self.bodyText(body, "error")
        let description =
            challenge?.parameters["error_description"] ?? Self.bodyText(body, "error_description")
            ?? Self.bodyText(body, "message")
        var line = "HTTP \(status.code)\(status.reasonPhrase.isEmpty ? "" : " \(status.reasonPhrase)")"
        if let error { line += ": \(Self.short(error))" }
        if let description { line += error == nil ? ": \(Self.short(description))" : " (\(Self.short(description)))" }
        if let hint = Self.hint(status: status.code, error: error, challenge: challenge, headers: headers, url: url) {
            line += ". \(hint)"
        }
        message = line
    }

    /// What to do about it, when the status says.
    private static func hint(
        status: Int, error: String?, challenge: AuthenticationChallenge?, headers: HTTPFields, url: URL?
    ) -> String? {
        // A resource that says where its tokens come from (RFC 9728): sign in for it.
        let resource = url.map { ["--resource", resourceIdentifier($0)] } ?? []
        let login = ShellCommand(["latchkey", "login"] + resource)
        switch (status, error) {
        case (401, "use_dpop_nonce"):
            break
        case (401, _) where challenge?.parameters["resource_metadata"] != nil:
            return
                "The server names where its tokens come from (its resource metadata, RFC 9728): sign in for it with `\(login)`, then run this again"
        case (403, "insufficient_scope") where challenge?.parameters["scope"] != nil && url != nil:
            let scope = challenge?.parameters["scope"] ?? ""
            let command = ShellCommand(login.arguments + ["--scope", scope])
            return
                "The token lacks a scope this request needs (it asks for: \(short(scope))): sign in for it with `\(command)`"
        default:
            break
        }
        switch (status, error) {
        case (401, "use_dpop_nonce"):
            return
                "The server kept asking for a newer DPoP nonce than the proofs carried (other processes used each one first); run it again"
        case (401, _):
            return
                "The server refused the account's token, also after a refresh: if it is meant for another server, use --resource; else sign in again with `latchkey login`"
        case (403, "insufficient_scope"):
            let scope = challenge?.parameters["scope"].map { " (it asks for: \(short($0)))" } ?? ""
            return "The token lacks a scope this request needs\(scope): sign in again with that scope"
        case (403, _):
            return "The server refused this account the request"
        case (429, _), (503, _):
            let after = headers[.retryAfter].map { " after \(short($0)) s" } ?? " later"
            return "The server is busy: try again\(after)"
        case (500..., _):
            return "The server failed; the request may be tried again later"
        default:
            return nil
        }
    }

    /// A string field of the body when it is a JSON object (`{"error": {"message": …}}` too).
    private static func bodyText(_ body: Data, _ field: String) -> String? {
        guard let object = try? JSONDecoder().decode([String: JSONValue].self, from: body) else { return nil }
        if let text = object[field]?.stringValue, !text.isEmpty { return text }
        if case .object(let nested)? = object["error"], let text = nested[field]?.stringValue, !text.isEmpty {
            return text
        }
        return nil
    }

    /// The resource a request to `url` is for: the URL without its query and fragment.
    static func resourceIdentifier(_ url: URL) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            return url.absoluteString
        }
        components.query = nil
        components.fragment = nil
        return components.string ?? url.absoluteString
    }

    /// At most 200 characters of a server's text.
    private static func short(_ text: String) -> String {
        text.count > 200 ? String(text.prefix(200)) + "…" : text
    }
}

import Foundation
import HTTPTypes
import Logging
import Tracing

/// What every provider does on the wire, written once: refuse a URL Latchkey will not send to,
/// cut the timeout to a lease holder's deadline, log the request (never its query, which can
/// carry an ID token) and the answer, trace and count it, turn a transport failure into a
/// ``ProviderError``, and turn an unsuccessful answer into the provider's own error through its
/// one hook, ``refusal``, with every secret the request carried removed from the provider's text.
struct ProviderWire: Sendable {
    let transport: any HTTPTransport
    let options: HTTPTransportOptions
    let logger: Logger
    /// The time `Retry-After` dates are read against.
    let clock: any LatchkeyClock
    /// How this provider reads an unsuccessful answer (OAuth 2.0 errors, Cognito's `__type`,
    /// AM's `{code, reason, message}`). It is handed the request, so that it can leave the
    /// request's secrets out of what it keeps.
    let refusal: @Sendable (ProviderRequest, HTTPTransportResponse, Date) -> ProviderError

    /// Sends `request` and returns the answer, whatever its status. A request with a DPoP proof
    /// answers the server's nonce challenge once (``DPoPSigning/send(_:_:)``).
    func send(_ request: ProviderRequest) async throws(ProviderError) -> HTTPTransportResponse {
        guard let proof = request.proof else { return try await transmit(request) }
        return try await proof.send(request.http) { http async throws(ProviderError) in
            var signed = request
            signed.http = http
            return try await transmit(signed)
        }
    }

    private func transmit(_ request: ProviderRequest) async throws(ProviderError) -> HTTPTransportResponse {
        let kind = request.endpoint
        guard let url = request.http.url, EndpointSecurity.isAcceptable(url) else {
            throw ProviderError(
                .insecureEndpoint, endpoint: kind,
                reason: "The \(kind) endpoint is not https (plain http is allowed on loopback only); nothing was sent.")
        }
        var options = self.options
        if let deadline = RequestDeadline.current {
            // A lease holder's request must be answered, body included, before its deadline.
            guard let timeout = deadline.timeout(cutting: options.timeout) else {
                throw ProviderError(
                    .timedOut, endpoint: kind,
                    reason: "No time was left to send the \(kind) request before the credential's lease ends.")
            }
            options.timeout = timeout
        }
        logger.trace(
            "sending request",
            metadata: [
                "endpoint": "\(kind)", "method": "\(request.http.method)", "host": "\(url.host ?? "")",
                "path": "\(url.path)", "bytes": "\(request.body?.count ?? 0)",
            ])
        let started = ContinuousClock.now
        let result = await withSpan(
            LatchkeyTelemetry.SpanName.providerRequest(request.http.method, kind), ofKind: .client
        ) { span -> Result<HTTPTransportResponse, ProviderError> in
            span.attributes["latchkey.endpoint"] = kind.rawValue
            span.attributes["http.request.method"] = request.http.method.rawValue
            span.attributes["server.address"] = url.host ?? ""
            if let port = url.port { span.attributes["server.port"] = port }
            do throws(TransportError) {
                let answer = try await transport.send(request.http, body: request.body, options: options)
                let status = answer.response.status.code
                span.attributes["http.response.status_code"] = status
                if status >= 400 {
                    span.attributes["error.type"] = "\(status)"
                    span.setStatus(SpanStatus(code: .error))
                }
                logger.debug(
                    "request answered",
                    metadata: ["endpoint": "\(kind)", "status": "\(status)", "bytes": "\(answer.body.count)"])
                return .success(answer)
            } catch {
                let failure = ProviderError.transport(error, endpoint: kind)
                span.attributes["error.type"] = failure.code.description
                span.setStatus(SpanStatus(code: .error))
                logger.debug("request failed", metadata: ["endpoint": "\(kind)", "error": "\(failure)"])
                return .failure(failure)
            }
        }
        Telemetry.providerRequest(
            kind, status: try? result.get().response.status.code, after: ContinuousClock.now - started)
        return try result.get()
    }

    /// Sends `request` and returns a 2xx answer; any other becomes the provider's refusal.
    func exchange(_ request: ProviderRequest) async throws(ProviderError) -> HTTPTransportResponse {
        let answer = try await send(request)
        guard (200..<300).contains(answer.response.status.code) else {
            let failure = refusal(request, answer, clock.date)
            logger.debug("request refused", metadata: ["endpoint": "\(request.endpoint)", "error": "\(failure)"])
            throw failure
        }
        return answer
    }

    /// Sends `request` and returns its 2xx answer's body as a JSON object.
    func json(_ request: ProviderRequest) async throws(ProviderError) -> [String: JSONValue] {
        let answer = try await exchange(request)
        guard let fields = Self.object(answer.body) else {
            throw ProviderError(
                .invalidResponse, endpoint: request.endpoint,
                reason: "The \(request.endpoint) endpoint's answer is not a JSON object.",
                status: answer.response.status.code)
        }
        return fields
    }

    /// A provider's text with every secret Latchkey sent removed, and at most `limit` characters.
    static func redact(_ text: String?, removing secrets: [String], limit: Int = 500) -> String? {
        guard var text else { return nil }
        for secret in secrets where !secret.isEmpty {
            text = text.replacingOccurrences(of: secret, with: "<redacted>")
        }
        return String(text.prefix(limit))
    }

    /// The answer's body as a JSON object, or `nil`.
    static func object(_ body: Data) -> [String: JSONValue]? {
        try? JSONDecoder().decode([String: JSONValue].self, from: body)
    }

    /// `Retry-After` as seconds or an HTTP date (RFC 9110 §10.2.3) from `now`, saturating.
    static func retryAfter(_ answer: HTTPTransportResponse, now: Date) -> Duration? {
        answer.response.headerFields[.retryAfter].flatMap { retryAfter($0, now: now) }
    }

    static func retryAfter(_ value: String, now: Date) -> Duration? {
        if let seconds = Double(value.trimmingCharacters(in: .whitespaces)), seconds >= 0,
            value.allSatisfy({ $0.isNumber || $0 == " " })
        {
            return .seconds(ProviderNumbers.seconds(seconds, fallback: 0))
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: value) else { return nil }
        return .seconds(ProviderNumbers.seconds(date.timeIntervalSince(now).rounded(.up), fallback: 0))
    }
}

/// The OAuth 2.0 refusal (RFC 6749 §5.2, RFC 6750 §3): the error code from the body, else from
/// the `WWW-Authenticate` challenge; the description with the request's secrets removed.
enum OAuthRefusal {
    static func error(_ request: ProviderRequest, _ answer: HTTPTransportResponse, now: Date) -> ProviderError {
        let status = answer.response.status.code
        let fields = ProviderWire.object(answer.body) ?? [:]
        // The code is the provider's text too: redacted like its description.
        let code =
            (fields["error"]?.stringValue
            ?? AuthenticationChallenge.parse(answer.response.headerFields[values: .wwwAuthenticate])
            .compactMap(\.error?.rawValue).first)
            .flatMap { ProviderWire.redact($0, removing: request.secrets, limit: 100) }
            .map(OAuthErrorCode.init(rawValue:))
        return ProviderError(
            code == nil ? .httpStatus : .oauth, endpoint: request.endpoint,
            reason: "The \(request.endpoint) endpoint refused the request.", oauthError: code,
            errorDescription: ProviderWire.redact(fields["error_description"]?.stringValue, removing: request.secrets),
            status: status, retryAfter: ProviderWire.retryAfter(answer, now: now))
    }
}

import Foundation
import HTTPTypes
import Logging
import Tracing

/// What every provider does on the wire, written once: refuse a URL Latchkey will not send to,
/// log the request (never its query, which can carry an ID token) and the answer, turn a
/// transport failure into a ``ProviderError``, and keep secrets out of a provider's text.
/// Each provider maps a refusal its own way (OAuth 2.0 errors, Cognito's `__type`).
struct ProviderWire: Sendable {
    let transport: any HTTPTransport
    let options: HTTPTransportOptions
    let logger: Logger

    /// Sends `request` to the endpoint `kind` and returns the answer, whatever its status.
    func send(_ kind: EndpointKind, _ request: HTTPRequest, body: Data?) async throws(ProviderError)
        -> HTTPTransportResponse
    {
        guard let url = request.url, EndpointSecurity.isAcceptable(url) else {
            throw ProviderError(
                .insecureEndpoint, endpoint: kind,
                reason: "The \(kind) endpoint is not https (plain http is allowed on loopback only); nothing was sent.")
        }
        logger.trace(
            "sending request",
            metadata: [
                "endpoint": "\(kind)", "method": "\(request.method)", "host": "\(url.host ?? "")",
                "path": "\(url.path)", "bytes": "\(body?.count ?? 0)",
            ])
        let started = ContinuousClock.now
        let result = await withSpan(
            LatchkeyTelemetry.SpanName.providerRequest(request.method, kind), ofKind: .client
        ) { span in
            span.attributes["latchkey.endpoint"] = kind.rawValue
            span.attributes["http.request.method"] = request.method.rawValue
            span.attributes["server.address"] = url.host ?? ""
            if let port = url.port { span.attributes["server.port"] = port }
            let result = await sendUntraced(kind, request, body: body)
            switch result {
            case .success(let answer):
                let status = answer.response.status.code
                span.attributes["http.response.status_code"] = status
                if status >= 400 {
                    span.attributes["error.type"] = "\(status)"
                    span.setStatus(SpanStatus(code: .error))
                }
            case .failure(let failure):
                span.attributes["error.type"] = failure.code.description
                span.setStatus(SpanStatus(code: .error))
            }
            return result
        }
        Telemetry.providerRequest(
            kind, status: try? result.get().response.status.code, after: ContinuousClock.now - started)
        return try result.get()
    }

    private func sendUntraced(_ kind: EndpointKind, _ request: HTTPRequest, body: Data?) async
        -> Result<HTTPTransportResponse, ProviderError>
    {
        // A lease holder's request must be answered before its lease's deadline.
        var options = self.options
        if let deadline = RequestDeadline.current {
            guard let timeout = deadline.timeout(cutting: options.timeout) else {
                return .failure(
                    ProviderError(
                        .timedOut, endpoint: kind,
                        reason: "No time was left to send the \(kind) request before the credential's lease ends."))
            }
            options.timeout = timeout
        }
        let answer: HTTPTransportResponse
        do {
            answer = try await transport.send(request, body: body, options: options)
        } catch {
            let failure = ProviderError.transport(error, endpoint: kind)
            logger.debug("request failed", metadata: ["endpoint": "\(kind)", "error": "\(failure)"])
            return .failure(failure)
        }
        logger.debug(
            "request answered",
            metadata: [
                "endpoint": "\(kind)", "status": "\(answer.response.status.code)", "bytes": "\(answer.body.count)",
            ])
        return .success(answer)
    }

    /// Sends `request` and returns a 2xx answer; any other becomes the error `refusal` makes of it.
    func exchange(
        _ kind: EndpointKind, _ request: HTTPRequest, body: Data?,
        refusal: (HTTPTransportResponse) -> ProviderError
    ) async throws(ProviderError) -> HTTPTransportResponse {
        let answer = try await send(kind, request, body: body)
        guard (200..<300).contains(answer.response.status.code) else {
            let failure = refusal(answer)
            logger.debug("request refused", metadata: ["endpoint": "\(kind)", "error": "\(failure)"])
            throw failure
        }
        return answer
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

import Foundation
public import HTTPTypes
import Metrics
import Tracing

/// The metrics and spans Latchkey emits, by name.
///
/// Latchkey records through swift-metrics and swift-distributed-tracing, so an application
/// sees them once it bootstraps `MetricsSystem` and `InstrumentationSystem` with backends of
/// its choice (Prometheus, OpenTelemetry, …); without a backend they cost next to nothing.
///
/// Every label, dimension, span name and attribute is a fixed word or a value from a closed
/// set (endpoint kinds, token kinds, outcomes, HTTP methods and status classes, a provider's
/// host name). None ever holds a token, a code, a secret, a user's name or a credential's id.
/// The DocC article <doc:Observability> explains each one.
public enum LatchkeyTelemetry {
    /// The names of Latchkey's metrics.
    public enum Metric {
        /// Counter: refresh requests sent to a token endpoint. Dimension `outcome`:
        /// `succeeded`, `rejected` (the refresh token is dead; the account must sign in again)
        /// or `failed` (anything else: the network, the provider's 5xx, storage).
        public static let refreshRequests = "latchkey_refresh_requests_total"
        /// Counter: callers that needed a refresh and got fresh tokens without sending one.
        /// Dimension `reason`: `joined` (a refresh was already in flight in this process) or
        /// `refreshed_elsewhere` (another process or instance refreshed while this one waited
        /// for the refresh lease).
        public static let refreshWaits = "latchkey_refresh_waits_total"
        /// Timer: one refresh from its start to fresh tokens in the store, the wait for the
        /// refresh lease included. Dimension `outcome`: `succeeded` or `failed`.
        public static let refreshDuration = "latchkey_refresh_duration_seconds"
        /// Counter: revocations, one per token, and the outbox's other server steps. Dimensions
        /// `token` (``TokenKind`` raw value; for the outbox's queued global sign-outs and
        /// end-session requests `global_sign_out` and `end_session`), `via` (`direct` from a
        /// revocation or sign-out, `outbox` from a drain) and `outcome`:
        /// `revoked`, `failed`, `not_present` or `ends_with_refresh_token` for `direct`;
        /// `revoked`, `failed`, `failed_permanently` or `expired` (dropped unsent once the
        /// token had expired) for `outbox`.
        public static let revocations = "latchkey_revocations_total"
        /// Counter: sign-outs. Dimensions `scope` (`device` or `global`) and `outcome`
        /// (`complete`, `partial` or `failed`, as ``SignOutResult`` says).
        public static let signOuts = "latchkey_signouts_total"
        /// Timer: one sign-out, every account and step of it. Dimension `scope`.
        public static let signOutDuration = "latchkey_signout_duration_seconds"
        /// Gauge: entries in the revocation outbox (waiting or failed for good), as the
        /// latest drain of this process found and left them.
        public static let outboxDepth = "latchkey_outbox_depth"
        /// Gauge: the age in seconds of the oldest entry in the outbox, 0 when it is empty,
        /// as the latest drain of this process found and left it.
        public static let outboxOldestAge = "latchkey_outbox_oldest_age_seconds"
        /// Timer: one request to a provider. Dimensions `endpoint` (``EndpointKind`` raw value)
        /// and `status` (`2xx`, `3xx`, `4xx`, `5xx`, or `error` when no answer came).
        public static let providerRequestDuration = "latchkey_provider_request_duration_seconds"
    }

    /// The names of Latchkey's spans.
    public enum SpanName {
        /// A refresh, lease wait included; the token endpoint's span is its child.
        public static let refresh = "latchkey.refresh"
        /// A revocation of a credential's tokens.
        public static let revoke = "latchkey.revoke"
        /// A sign-out. Attributes `latchkey.sign_out.scope` and `latchkey.sign_out.outcome`.
        public static let signOut = "latchkey.sign_out"
        /// One drain of the revocation outbox. Attributes `latchkey.outbox.revoked` and
        /// `latchkey.outbox.failed`.
        public static let drainOutbox = "latchkey.outbox.drain"
        /// A request to a provider is a client span named `<METHOD> <endpoint>`, for example
        /// `POST token`, with the attributes `latchkey.endpoint`, `http.request.method`,
        /// `server.address`, `server.port`, `http.response.status_code` and, on failure,
        /// `error.type`. The URL's path and query are left out: a query can carry an ID token.
        public static func providerRequest(_ method: HTTPRequest.Method, _ endpoint: EndpointKind) -> String {
            "\(method.rawValue) \(endpoint.rawValue)"
        }
    }
}

/// Where Latchkey's code records its metrics: one function per fact, so the names and the
/// closed sets of dimension values live in one place.
enum Telemetry {
    typealias Metric = LatchkeyTelemetry.Metric

    static func refreshRequest(_ outcome: Result<Void, ProviderError>) {
        let word: String
        switch outcome {
        case .success: word = "succeeded"
        case .failure(let error): word = error.requiresSignIn ? "rejected" : "failed"
        }
        Counter(label: Metric.refreshRequests, dimensions: [("outcome", word)]).increment()
    }

    enum RefreshWait: String {
        case joined
        case refreshedElsewhere = "refreshed_elsewhere"
    }

    static func refreshWait(_ reason: RefreshWait) {
        Counter(label: Metric.refreshWaits, dimensions: [("reason", reason.rawValue)]).increment()
    }

    static func refreshFinished(succeeded: Bool, after duration: Duration) {
        Timer(
            label: Metric.refreshDuration, dimensions: [("outcome", succeeded ? "succeeded" : "failed")],
            preferredDisplayUnit: .seconds
        ).record(duration: duration)
    }

    static func revocations(_ outcomes: [TokenKind: RevocationOutcome]) {
        for (kind, outcome) in outcomes {
            let word =
                switch outcome {
                case .revoked: "revoked"
                case .failed: "failed"
                case .notPresent: "not_present"
                case .endsWithRefreshToken: "ends_with_refresh_token"
                }
            revocation(kind, via: "direct", outcome: word)
        }
    }

    enum OutboxOutcome: String {
        case revoked, failed, expired
        case failedPermanently = "failed_permanently"
    }

    static func outboxStep(_ action: OutboxEntry.Action, _ outcome: OutboxOutcome) {
        revocation(action.rawValue, via: "outbox", outcome: outcome.rawValue)
    }

    private static func revocation(_ kind: TokenKind, via: String, outcome: String) {
        revocation(kind.rawValue, via: via, outcome: outcome)
    }

    private static func revocation(_ token: String, via: String, outcome: String) {
        Counter(label: Metric.revocations, dimensions: [("token", token), ("via", via), ("outcome", outcome)])
            .increment()
    }

    static func signOut(global: Bool, _ result: SignOutResult, after duration: Duration) {
        let scope = global ? "global" : "device"
        Counter(label: Metric.signOuts, dimensions: [("scope", scope), ("outcome", result.outcomeWord)]).increment()
        Timer(label: Metric.signOutDuration, dimensions: [("scope", scope)], preferredDisplayUnit: .seconds)
            .record(duration: duration)
    }

    /// The outbox as a drain left it: how many entries, and when the oldest was queued.
    static func outbox(depth: Int, oldest: Date?, now: Date) {
        Gauge(label: Metric.outboxDepth).record(depth)
        Gauge(label: Metric.outboxOldestAge).record(max(0, oldest.map { now.timeIntervalSince($0) } ?? 0))
    }

    static func providerRequest(_ endpoint: EndpointKind, status: Int?, after duration: Duration) {
        let word = status.map { "\($0 / 100)xx" } ?? "error"
        Timer(
            label: Metric.providerRequestDuration,
            dimensions: [("endpoint", endpoint.rawValue), ("status", word)], preferredDisplayUnit: .seconds
        ).record(duration: duration)
    }
}

extension SignOutResult {
    /// `complete`, `partial` or `failed`: the metric's and span's word for the result.
    var outcomeWord: String {
        switch self {
        case .complete: "complete"
        case .partial: "partial"
        case .failed: "failed"
        }
    }
}

import Foundation
import HTTPTypes
public import Latchkey
public import Logging
import NIOConcurrencyHelpers
import Testing

/// The trace pass: the whole suite with every Latchkey component logging at trace level, and
/// every log line checked for token values.
///
/// `LATCHKEY_TEST_TRACE=1` turns it on (`scripts/test` runs its one plain pass so). Then
/// ``logger(_:)`` gives a trace-level logger whose lines are checked as they are written, and
/// ``watching(_:)`` wraps the transport so that every token a provider hands out (in an OAuth
/// token response, a Cognito `AuthenticationResult` or a Ping journey's session) is known to
/// the check. A line that holds
/// one is recorded as an issue of the running test. Latchkey logs the description of the errors
/// it throws, so error descriptions pass through the same check. When the process ends,
/// `LATCHKEY_TEST_TRACE_REPORT` (if set) receives how many lines and tokens were seen, so the
/// script can refuse a pass that logged nothing. Metrics and spans pass the same check: every
/// label, dimension, span name and attribute the run made (``RecordedTelemetry``), at its end.
public enum TraceLog {
    /// Whether this run is the trace pass.
    public static let isEnabled = ProcessInfo.processInfo.environment["LATCHKEY_TEST_TRACE"] == "1"

    private struct State {
        var secrets: Set<String> = []
        var lines = 0
        var leaks: [String] = []
    }

    private static let state: NIOLockedValueBox<State> = {
        if isEnabled {
            // Metrics and spans are checked too: every one the run made, when it ends.
            RecordedTelemetry.install()
            atexit { TraceLog.writeReport() }
        }
        return NIOLockedValueBox(State())
    }()

    /// A logger for a Latchkey component: trace level and checked in the trace pass, nil (the
    /// component's silent default) otherwise.
    public static func logger(_ label: String) -> Logger? {
        guard isEnabled else { return nil }
        return LineLogHandler.logger(label) { line, message in
            if !TraceLog.check(line).isEmpty {
                // The value itself stays out of the report, which is a log of its own.
                Issue.record("A token value reached a log line of \(label): \(message)")
            }
        }
    }

    /// `transport`, made to learn the tokens in the answers it carries in the trace pass.
    public static func watching(_ transport: any HTTPTransport) -> any HTTPTransport {
        isEnabled ? WatchingTransport(base: transport) : transport
    }

    /// Adds `value` to the secrets no line may hold. Short values (test fixtures such as
    /// `at-alice`) are left out: they would match ordinary words.
    public static func register(secret value: String) {
        guard value.utf8.count >= 16 else { return }
        state.withLockedValue { _ = $0.secrets.insert(value) }
    }

    /// The known secrets `line` holds.
    public static func leaks(in line: String) -> [String] {
        state.withLockedValue { state in state.secrets.filter { line.contains($0) } }
    }

    /// Counts `line`, and returns the secrets it leaks.
    static func check(_ line: String) -> [String] {
        state.withLockedValue { state in
            state.lines += 1
            let found = state.secrets.filter { line.contains($0) }
            if !found.isEmpty { state.leaks.append(line) }
            return Array(found)
        }
    }

    private static func writeReport() {
        guard let path = ProcessInfo.processInfo.environment["LATCHKEY_TEST_TRACE_REPORT"] else { return }
        let telemetry = RecordedTelemetry.everythingNamed()
        let report = state.withLockedValue { state in
            // A metric or span that holds a token is named in the report with the token cut out.
            var named: [String] = []
            for text in telemetry {
                let found = state.secrets.filter { text.contains($0) }
                guard !found.isEmpty else { continue }
                state.leaks.append(text)
                named.append(found.reduce(text) { $0.replacingOccurrences(of: $1, with: "<token>") })
            }
            return "lines \(state.lines)\ntelemetry \(telemetry.count)\nsecrets \(state.secrets.count)\n"
                + "leaks \(state.leaks.count)\n" + named.map { "telemetry leak: \($0.prefix(300))\n" }.joined()
        }
        try? Data(report.utf8).write(to: URL(fileURLWithPath: path))
    }

    /// Forwards to the real transport and learns every token in the answers.
    struct WatchingTransport: HTTPTransport {
        let base: any HTTPTransport

        func send(_ request: HTTPRequest, body: Data?, options: HTTPTransportOptions) async throws(TransportError)
            -> HTTPTransportResponse
        {
            let response = try await base.send(request, body: body, options: options)
            if let object = try? JSONSerialization.jsonObject(with: response.body) as? [String: Any] {
                learn(object)
            }
            return response
        }

        private func learn(_ object: [String: Any]) {
            let names: Set<String> = [
                "access_token", "refresh_token", "id_token", "device_secret", "device_code",
                "AccessToken", "RefreshToken", "IdToken",
                // A Ping journey's session, and the state of a journey under way.
                "tokenId", "authId",
            ]
            for (name, value) in object {
                if names.contains(name), let text = value as? String { TraceLog.register(secret: text) }
                if let nested = value as? [String: Any] { learn(nested) }
            }
        }
    }
}

/// A log handler that hands every event, as one line with its metadata, to `sink`.
public struct LineLogHandler: LogHandler {
    public let label: String
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .trace
    private let sink: @Sendable (_ line: String, _ message: Logger.Message) -> Void

    /// A trace-level logger whose lines go to `sink`.
    public static func logger(
        _ label: String, sink: @escaping @Sendable (_ line: String, _ message: Logger.Message) -> Void
    ) -> Logger {
        var logger = Logger(label: label) { label in LineLogHandler(label: label, sink: sink) }
        logger.logLevel = .trace
        return logger
    }

    init(label: String, sink: @escaping @Sendable (String, Logger.Message) -> Void) {
        self.label = label
        self.sink = sink
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { _, new in new }
        sink("\(event.level) \(label): \(event.message) \(all) \(event.source) \(event.function)", event.message)
    }
}

import CoreMetrics
import Foundation
public import InMemoryTracing
import Instrumentation
import NIOConcurrencyHelpers
import Tracing

/// The test process's metrics and tracing backends: every metric Latchkey makes and every span
/// it finishes is kept, so that a test can read its own, and the trace pass can check each
/// label, dimension, span name and attribute for token values (``TraceLog``).
///
/// Tests run in parallel in one process, while metrics are global: a test reads what happened
/// inside ``recording(_:)`` only, which tags its task (and the tasks it starts) through the
/// instrumentation context.
public enum RecordedTelemetry {
    /// One recorded metric value.
    public struct Event: Sendable, CustomStringConvertible {
        /// The metric's label.
        public var label: String
        /// The metric's dimensions.
        public var dimensions: [String: String]
        /// The value: a count, a gauge's reading, or a timer's nanoseconds.
        public var value: Double

        public var description: String { "\(label)\(dimensions.sorted { $0.key < $1.key }) \(value)" }
    }

    /// What happened inside one ``recording(_:)``.
    public struct Recording: Sendable {
        /// The metric values, in order.
        public var events: [Event]
        /// The spans that finished.
        public var spans: [FinishedInMemorySpan]

        /// The sum of the counter `label`'s increments whose dimensions include `dimensions`.
        public func count(_ label: String, _ dimensions: [String: String] = [:]) -> Int {
            Int(matching(label, dimensions).reduce(0) { $0 + $1.value })
        }

        /// The values recorded for `label` whose dimensions include `dimensions`.
        public func values(_ label: String, _ dimensions: [String: String] = [:]) -> [Double] {
            matching(label, dimensions).map(\.value)
        }

        private func matching(_ label: String, _ dimensions: [String: String]) -> [Event] {
            events.filter { event in
                event.label == label && dimensions.allSatisfy { event.dimensions[$0.key] == $0.value }
            }
        }
    }

    /// The tracer every span of the test process goes to.
    public static let tracer = InMemoryTracer()
    private static let state = NIOLockedValueBox(State())

    private struct State {
        /// Every distinct metric (label and dimensions) made in this process.
        var metrics: Set<String> = []
        /// The events of the recordings under way, by their tag.
        var recordings: [UUID: [Event]] = [:]
    }

    private static let installed: Void = {
        MetricsSystem.bootstrap(Factory())
        InstrumentationSystem.bootstrap(tracer)
    }()

    /// Makes these backends the process's, once; later calls do nothing.
    public static func install() { installed }

    /// Runs `body` and returns what it recorded: the metric values and the finished spans of
    /// its task and the tasks it started.
    public static func recording<T: Sendable>(
        _ body: () async throws -> T
    ) async rethrows -> (T, Recording) {
        install()
        let tag = UUID()
        state.withLockedValue { $0.recordings[tag] = [] }
        var context = InstrumentationContext.current ?? .topLevel
        context[TagKey.self] = tag
        let value = try await InstrumentationContext.withValue(context) { try await body() }
        let events = state.withLockedValue { $0.recordings.removeValue(forKey: tag) ?? [] }
        let spans = tracer.finishedSpans.filter { $0.context[TagKey.self] == tag }
        return (value, Recording(events: events, spans: spans))
    }

    /// Every name and value of the process's metrics and finished spans, one string each: what
    /// the trace pass checks for tokens.
    static func everythingNamed() -> [String] {
        var texts = state.withLockedValue { Array($0.metrics) }
        for span in tracer.finishedSpans {
            texts.append(span.operationName)
            span.attributes.forEach { name, attribute in texts.append("\(name)=\(attribute)") }
            for error in span.errors { texts.append("\(error.error)") }
        }
        return texts
    }

    private enum TagKey: InstrumentationContextKey {
        typealias Value = UUID
    }

    fileprivate static func made(_ label: String, _ dimensions: [(String, String)]) {
        let text = ([label] + dimensions.map { "\($0)=\($1)" }).joined(separator: " ")
        state.withLockedValue { _ = $0.metrics.insert(text) }
    }

    fileprivate static func record(_ label: String, _ dimensions: [(String, String)], _ value: Double) {
        guard let tag = InstrumentationContext.current?[TagKey.self] else { return }
        let event = Event(
            label: label, dimensions: Dictionary(dimensions, uniquingKeysWith: { _, last in last }), value: value)
        state.withLockedValue { state in state.recordings[tag]?.append(event) }
    }

    /// Makes handlers that pass every value to ``record(_:_:_:)``.
    private struct Factory: MetricsFactory {
        func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
            Handler(label, dimensions)
        }
        func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler
        {
            Handler(label, dimensions)
        }
        func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
            Handler(label, dimensions)
        }
        func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
            Handler(label, dimensions)
        }
        func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
            Handler(label, dimensions)
        }
        func destroyCounter(_ handler: any CounterHandler) {}
        func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {}
        func destroyMeter(_ handler: any MeterHandler) {}
        func destroyRecorder(_ handler: any RecorderHandler) {}
        func destroyTimer(_ handler: any TimerHandler) {}
    }

    /// One metric's handler, of whatever kind: immutable, so Sendable.
    private final class Handler: CounterHandler, FloatingPointCounterHandler, MeterHandler, RecorderHandler,
        TimerHandler, Sendable
    {
        let label: String
        let dimensions: [(String, String)]

        init(_ label: String, _ dimensions: [(String, String)]) {
            self.label = label
            self.dimensions = dimensions
            RecordedTelemetry.made(label, dimensions)
        }

        private func keep(_ value: Double) { RecordedTelemetry.record(label, dimensions, value) }

        func increment(by amount: Int64) { keep(Double(amount)) }
        func increment(by amount: Double) { keep(amount) }
        func decrement(by amount: Double) { keep(-amount) }
        func set(_ value: Int64) { keep(Double(value)) }
        func set(_ value: Double) { keep(value) }
        func record(_ value: Int64) { keep(Double(value)) }
        func record(_ value: Double) { keep(value) }
        func recordNanoseconds(_ duration: Int64) { keep(Double(duration)) }
        func reset() {}
    }
}

import Foundation

/// Numbers the tool turns into text or reads from its environment, made safe: no input — a
/// provider's claim, an environment variable — may trap the process. Pure functions, fuzzed on
/// their own (`scripts/fuzz`).
enum CLINumbers {
    /// A JSON number as a person reads it: a whole number without a fraction when it is one
    /// within `Int`'s range, any other as Swift prints it (`1e+20`, `0.5`).
    static func text(_ number: Double) -> String {
        if number.rounded() == number, let whole = Int(exactly: number) { return String(whole) }
        return String(number)
    }

    /// Seconds read from `text` (an environment variable's value): a finite positive number, held
    /// within `range`; `fallback` when there is no such number (`inf`, `nan`, `-1`, `5s`, nothing).
    static func seconds(_ text: String?, fallback: Double, in range: ClosedRange<Double>) -> Double {
        guard let text, let value = Double(text.trimmingCharacters(in: .whitespaces)), value.isFinite, value > 0
        else {
            return fallback
        }
        return min(max(value, range.lowerBound), range.upperBound)
    }

    /// A `Duration` of `seconds`, which must be finite (see ``seconds(_:fallback:in:)``), saturating.
    static func duration(seconds: Double) -> Duration {
        guard seconds.isFinite else { return .seconds(0) }
        let milliseconds = (seconds * 1_000).rounded()
        return .milliseconds(Int64(exactly: milliseconds) ?? (milliseconds > 0 ? Int64.max / 1_000 : 0))
    }

    /// A date as whole seconds since 1970, saturating at `Int`'s range.
    static func epochSeconds(_ date: Date) -> Int {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        if let exact = Int(exactly: seconds) { return exact }
        return seconds > 0 ? Int.max : Int.min
    }
}

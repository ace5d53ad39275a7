/// Numbers the tool turns into text or reads from its environment, made safe: no input — a
/// provider's claim, an environment variable — may trap the process. Pure functions, fuzzed on
/// their own (`scripts/fuzz`).
package enum CLINumbers {
    /// A JSON number as a person reads it: a whole number without a fraction when it is one
    /// within `Int`'s range, any other as Swift prints it (`1e+20`, `0.5`).
    package static func text(_ number: Double) -> String {
        if number.rounded() == number, let whole = Int(exactly: number) { return String(whole) }
        return String(number)
    }

    /// Seconds read from `text` (an environment variable's value): a finite positive number, held
    /// within `range`; `fallback` when there is no such number (`inf`, `nan`, `-1`, `5s`, nothing).
    package static func seconds(_ text: String?, fallback: Double, in range: ClosedRange<Double>) -> Double {
        guard let text, let value = Double(trimmingBlanks(text)), value.isFinite, value > 0
        else {
            return fallback
        }
        return min(max(value, range.lowerBound), range.upperBound)
    }

    /// A `Duration` of `seconds`, which must be finite (see ``seconds(_:fallback:in:)``), saturating.
    package static func duration(seconds: Double) -> Duration {
        guard seconds.isFinite else { return .seconds(0) }
        let milliseconds = (seconds * 1_000).rounded()
        return .milliseconds(Int64(exactly: milliseconds) ?? (milliseconds > 0 ? Int64.max / 1_000 : 0))
    }

    /// A date as whole seconds since 1970, saturating at `Int`'s range.
    package static func epochSeconds(_ date: Date) -> Int {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        if let exact = Int(exactly: seconds) { return exact }
        return seconds > 0 ? Int.max : Int.min
    }

    /// `text` without the spaces and tabs around it (Unicode's space separators and the tab).
    package static func trimmingBlanks(_ text: some StringProtocol) -> Substring {
        func isBlank(_ character: Character) -> Bool {
            character == "\t"
                || character.unicodeScalars.allSatisfy { $0.properties.generalCategory == .spaceSeparator }
        }
        var view = Substring(text)
        while let first = view.first, isBlank(first) { view.removeFirst() }
        while let last = view.last, isBlank(last) { view.removeLast() }
        return view
    }
}

/// Numbers a provider sends (lifetimes, intervals, delays) made safe to use: a provider can send
/// `1e308`, a negative number or, after decoding, `nan`, and none of them may trap or travel on.
package enum ProviderNumbers {
    /// A hundred years, the longest lifetime or delay Latchkey takes from a provider.
    package static let longest: Double = 100 * 365 * 86_400

    /// `value` seconds within `0...longest`, or `fallback` when there is no number.
    package static func seconds(_ value: Double?, fallback: Double) -> Double {
        guard let value, !value.isNaN else { return fallback }
        return min(max(value, 0), longest)
    }

    /// `value` as an `Int` within `range`, saturating instead of trapping.
    package static func integer(_ value: Double?, fallback: Int, in range: ClosedRange<Int>) -> Int {
        guard let value, !value.isNaN else { return min(max(fallback, range.lowerBound), range.upperBound) }
        if value <= Double(range.lowerBound) { return range.lowerBound }
        if value >= Double(range.upperBound) { return range.upperBound }
        return Int(value)
    }
}

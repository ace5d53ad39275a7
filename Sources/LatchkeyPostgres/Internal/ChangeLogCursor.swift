/// Where a reader of the change log (`latchkey_change`) is: every entry up to ``floor`` has been
/// seen (or given up on), and which entries above it were seen already. A pure value: the feed
/// reads the entries above ``floor`` and hands their numbers to ``take(_:now:)``.
///
/// Entry numbers come from a sequence, taken when a change is written but visible only when its
/// transaction commits: a change may become visible after a later-numbered one, so the reader
/// cannot simply go on from the highest number it saw. It keeps the gap below what it saw, and
/// reads it again at each poll, until the missing entry shows up or ``gapLifetime`` has passed
/// (a transaction rolled back leaves its number unused for good; one that commits does so within
/// a moment of taking it).
package struct ChangeLogCursor: Sendable, Equatable {
    /// How long a missing entry number is waited for before it is taken as never coming.
    package static let gapLifetime: Double = 10
    /// The most entry numbers below what was seen that are waited for.
    static let widestGap: Int64 = 10_000

    /// Every entry numbered up to this one has been seen or given up on.
    package private(set) var floor: Int64
    /// Entries above ``floor`` seen already.
    private var seen: Set<Int64> = []
    /// Missing entry numbers below the highest seen, and when each was first found missing.
    private var gaps: [Int64: Double] = [:]

    /// A cursor that reads the entries after `floor`.
    package init(after floor: Int64) {
        self.floor = floor
    }

    /// Takes the entry numbers a read above ``floor`` found (in any order), at `now` (seconds on
    /// any steady scale), and answers those not seen before, in order.
    package mutating func take(_ numbers: [Int64], now: Double) -> [Int64] {
        let fresh = Set(numbers.filter { $0 > floor && !seen.contains($0) }).sorted()
        seen.formUnion(fresh)
        for number in fresh { gaps[number] = nil }
        // Far behind (the log was pruned past it, or the sequence jumped): go on from there.
        if let lowest = seen.min(), lowest - floor > Self.widestGap {
            floor = lowest - 1
            gaps.removeAll()
        }
        if let highest = seen.max(), highest > floor + 1 {
            for number in (floor + 1)..<highest where !seen.contains(number) && gaps[number] == nil {
                gaps[number] = now
            }
        }
        while true {
            let next = floor + 1
            if seen.remove(next) != nil {
                floor = next
            } else if let since = gaps[next], now - since >= Self.gapLifetime {
                gaps[next] = nil
                floor = next
            } else {
                break
            }
        }
        return fresh
    }
}

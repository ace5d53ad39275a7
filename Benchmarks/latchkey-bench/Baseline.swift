import Foundation

/// The figures of the run README.md records (the fenced block after the line
/// `<!-- latchkey-bench figures -->`, `name value unit` per line), and this run's against them: a
/// figure more than 20 % worse is printed `regressed`, and the bench then exits with status 1.
///
/// Times and memory (ms, µs, MiB) are better lower, rates (a unit ending in `/s`) higher; counts
/// and ratios are invariants or context, and are not compared.
enum Baseline {
    static let tolerance = 0.20

    /// README.md of the package the bench was built from.
    static var readme: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("README.md")
    }

    /// The recorded figures by name; empty when README has none.
    static func recorded(in text: String) -> [String: Figure] {
        guard let marker = text.range(of: "<!-- latchkey-bench figures -->") else { return [:] }
        var figures: [String: Figure] = [:]
        var inside = false
        for line in text[marker.upperBound...].split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") {
                if inside { break }
                inside = true
                continue
            }
            guard inside else { continue }
            let parts = line.split(separator: " ")
            guard parts.count == 3, let value = Double(parts[1]) else { continue }
            figures[String(parts[0])] = Figure(name: String(parts[0]), value: value, unit: String(parts[2]))
        }
        return figures
    }

    /// How much worse `figure` is than `recorded` (0.25: a quarter), or `nil` when they are not
    /// compared (another unit, a count, a ratio).
    static func worsening(_ figure: Figure, against recorded: Figure) -> Double? {
        guard figure.unit == recorded.unit, recorded.value > 0, figure.value.isFinite else { return nil }
        if ["ms", "µs", "MiB"].contains(figure.unit) { return figure.value / recorded.value - 1 }
        if figure.unit.hasSuffix("/s") { return recorded.value / max(figure.value, .leastNonzeroMagnitude) - 1 }
        return nil
    }

    /// The figures of this run more than ``tolerance`` worse than README's, as lines to print.
    static func regressions(_ figures: [Figure], recorded: [String: Figure]) -> [String] {
        figures.compactMap { figure in
            guard let before = recorded[figure.name], let worse = worsening(figure, against: before), worse > tolerance
            else { return nil }
            return
                "\(figure.name) \(figure.value) \(figure.unit) regressed (README: \(before.value), +\(Int((worse * 100).rounded()))%)"
        }
    }
}

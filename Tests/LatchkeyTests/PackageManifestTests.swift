import Foundation
import LatchkeyTestSupport
import Testing

/// What `Package.swift` declares is what the code uses: a target that declares a dependency it
/// never imports makes every build compile and link it for nothing, and hides what the target
/// really needs.
@Suite("Package.swift")
struct PackageManifestTests {
    /// The package's folder.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The modules a product brings, where they are not named as the product is.
    static let modules: [String: Set<String>] = [
        "_CryptoExtras": ["CryptoExtras", "_CryptoExtras"], "Metrics": ["Metrics", "CoreMetrics"],
    ]

    /// The modules the Swift files under `folder` import.
    static func imports(under folder: URL) throws -> Set<String> {
        let pattern = try Regex(
            #"^\s*(?:@\w+\s+)*(?:(?:public|package|internal)\s+)?import\s+(?:[a-z]+\s+)?([A-Za-z_]\w*)"#
        )
        .anchorsMatchLineEndings()
        var found: Set<String> = []
        let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)
        while let file = files?.nextObject() as? URL {
            guard file.pathExtension == "swift" else { continue }
            let text = try String(contentsOf: file, encoding: .utf8)
            for match in text.matches(of: pattern) {
                if let name = match.output[1].substring { found.insert(String(name)) }
            }
        }
        return found
    }

    @Test("every dependency a target declares is imported by one of its files")
    func noUnusedDependency() async throws {
        let swift = URL(fileURLWithPath: "/usr/bin/env")
        // A scratch folder of its own: the suite's own build folder is SwiftPM's while it runs.
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-manifest-\(UUID())")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let dumped = try await ChildProcess.run(
            swift,
            ["swift", "package", "--package-path", Self.root.path, "--scratch-path", scratch.path, "dump-package"])
        try #require(dumped.status == 0, "\(dumped.stderr)")
        let manifest = try #require(
            try JSONSerialization.jsonObject(with: Data(dumped.stdout.utf8)) as? [String: Any])
        let targets = try #require(manifest["targets"] as? [[String: Any]])
        var checked = 0
        for target in targets {
            guard let name = target["name"] as? String, let type = target["type"] as? String, type != "plugin" else {
                continue
            }
            let folder = (target["path"] as? String) ?? "\(type == "test" ? "Tests" : "Sources")/\(name)"
            let imported = try Self.imports(under: Self.root.appendingPathComponent(folder))
            for dependency in target["dependencies"] as? [[String: [Any]]] ?? [] {
                guard let declared = dependency.values.first?.first as? String else { continue }
                let modules = Self.modules[declared] ?? [declared]
                #expect(!imported.isDisjoint(with: modules), "\(name) declares \(declared) and never imports it")
                checked += 1
            }
        }
        #expect(checked > 100, "the manifest's dependencies were read")
    }
}

import Foundation
import Latchkey
import Testing

/// ARCHITECTURE.md stays true: every path it names is there.
@Suite("Architecture map")
struct ArchitectureTests {
    @Test("the core library imports no FoundationNetworking (libcurl on Linux)")
    func noNetworkingImport() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let sources = root.appendingPathComponent("Sources/Latchkey")
        let files = try #require(FileManager.default.enumerator(atPath: sources.path)?.allObjects as? [String])
        let swiftFiles = files.filter { $0.hasSuffix(".swift") }
        #expect(swiftFiles.count > 50)
        for file in swiftFiles {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            #expect(!text.contains("import FoundationNetworking"), "\(file) imports FoundationNetworking")
        }
    }

    @Test("every file and folder ARCHITECTURE.md names exists")
    func pathsExist() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("ARCHITECTURE.md"), encoding: .utf8)
        // Code spans that look like paths: a folder of the repository, or a Swift file.
        let spans = text.split(separator: "`", omittingEmptySubsequences: false).enumerated()
            .filter { $0.offset % 2 == 1 }.map { String($0.element) }
        let roots = ["Sources/", "Tests/", "Benchmarks/", "Plugins/", "scripts/", "Package.swift"]
        var named = 0
        for span in spans {
            let path: String
            if roots.contains(where: span.hasPrefix) {
                path = span
            } else if span.hasSuffix(".swift"), !span.contains(" ") {
                // A file named without its folder: somewhere under Sources.
                let found = FileManager.default.enumerator(atPath: root.appendingPathComponent("Sources").path)?
                    .contains { ($0 as? String)?.hasSuffix("/" + span) == true }
                #expect(found == true, "ARCHITECTURE.md names \(span), which is nowhere under Sources")
                named += 1
                continue
            } else if let folder = Self.latchkeyFolder(span) {
                path = "Sources/Latchkey/" + folder
            } else {
                continue
            }
            named += 1
            #expect(
                FileManager.default.fileExists(atPath: root.appendingPathComponent(path).path),
                "ARCHITECTURE.md names \(path), which does not exist")
        }
        #expect(named >= 30, "the map names the code it maps")
    }

    @Test("CHANGELOG's newest release is the version the tool prints, and nothing is left unreleased")
    func changelogVersion() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let releases = text.split(separator: "\n").filter { $0.hasPrefix("## ") }
        #expect(releases.first?.hasPrefix("## [\(LatchkeyVersion.current)] - ") == true, "\(releases.first ?? "")")
        #expect(!releases.contains { $0.lowercased().contains("unreleased") })
    }

    /// `Credentials/`, `Storage/Sealing`: a folder of the Latchkey target, as the map names them.
    static func latchkeyFolder(_ span: String) -> String? {
        let folder = span.hasSuffix("/") ? String(span.dropLast()) : span
        let first = folder.split(separator: "/").first.map(String.init) ?? ""
        let concepts = [
            "Credentials", "Storage", "SignOut", "Providers", "OAuth2", "JOSE", "Transport", "Internal", "Tokens",
        ]
        return concepts.contains(first) && !folder.contains(" ") ? folder : nil
    }
}

import Foundation
import LatchkeyCommandLine
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// "Run this to fix it" hints are safe to run: every word a server chose is one quoted word of
/// the command, never code; and git's host is decided by one rule, whoever asks.
@Suite("latchkey: hints safe to run, and the git host rule")
struct CLIHintTests: DevProviderCLITest {
    /// What a POSIX shell makes of `line`: its words, one per line, with `latchkey` replaced by
    /// printf; and whether anything ran (a file made in `folder`).
    static func words(of line: String, in folder: TemporaryFolder) async throws -> [String] {
        let script = "cd '\(folder.path)' && printf '%s\\n' " + line.dropFirst("latchkey".count)
        let run = try await ChildProcess.run(URL(fileURLWithPath: "/bin/sh"), ["-c", script], input: "")
        return run.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }

    static let hostile = [
        "files.write", "a b", "it's", "$(touch pwned)", "`touch pwned`", "; touch pwned", "x\"y", "-", "",
        "=x", "~root", "*", "a\\b",
    ]

    @Test("a command's words read back by a shell as the same words; nothing in them runs")
    func shellWords() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let command = ShellCommand(["latchkey", "login", "--scope"] + Self.hostile)
        let read = try await Self.words(of: command.description, in: folder)
        #expect(read == ["login", "--scope"] + Self.hostile)
        #expect(!FileManager.default.fileExists(atPath: folder.file("pwned")), "a word ran as code")
        // A control character is made visible, never written raw.
        #expect(!ShellCommand(["a\u{1B}]0;title\u{07}"]).description.contains("\u{1B}"))
    }

    @Test("api's hint for a missing scope quotes the scope the server named")
    func apiScopeHint() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        try await withDevices { dev, a, _ in
            #expect(try await login(a, "alice").status == 0)
            let userinfo = dev.url(.userinfo).absoluteString
            let scope = "files.write $(touch pwned) it's"
            dev.faults.set(
                DevProviderFault(
                    status: 403, wwwAuthenticate: #"Bearer error="insufficient_scope", scope="\#(scope)""#,
                    remaining: 1), for: .userinfo)
            let run = try await a.run("api", userinfo)
            #expect(run.status == 1)
            let hinted = try #require(
                run.stderr.split(separator: "`").first { $0.hasPrefix("latchkey login") }, "\(run.stderr)")
            let read = try await Self.words(of: String(hinted), in: folder)
            #expect(read.last == scope, "\(read)")
            #expect(!FileManager.default.fileExists(atPath: folder.file("pwned")), "the server's scope ran as code")
        }
    }

    @Test("git's host rule: a named host over https, plain http only to this machine or where allowed, nothing else")
    func gitHostRule() throws {
        var entry = ProviderEntry(name: "corp", kind: .openid, clientID: "cli")
        entry.gitHosts = ["git.example", "127.0.0.1:8080"]
        var open = ProviderEntry(name: "lab", kind: .openid, clientID: "cli")
        open.gitHosts = ["lab.example"]
        open.gitAllowsHTTP = true
        func decide(_ url: String) -> String {
            guard let request = GitCredentialRequest(url: url) else { return "unreadable" }
            switch GitHostRule.decide(request, providers: [entry, open]) {
            case .provider(let found): return found.name
            case .unknownHost: return "unknown"
            case .plainHTTP: return "plain"
            case .notHTTP: return "not-http"
            }
        }
        #expect(decide("https://git.example") == "corp")
        #expect(decide("https://alice@git.example") == "corp")
        #expect(decide("http://git.example") == "plain")
        #expect(decide("http://127.0.0.1:8080") == "corp")
        #expect(decide("http://lab.example") == "lab")
        #expect(decide("https://any-host.example") == "unknown")
        #expect(decide("ssh://git.example") == "not-http")
        #expect(decide("https://git.example/path") == "unreadable")
        #expect(decide("https://a@b@git.example") == "unreadable")
        let named = try #require(GitCredentialRequest(url: "https://al%20ice@git.example"))
        #expect(named.fields["username"] == "al ice")
        #expect(GitCredentialRequest(url: try #require(named.url))?.fields == named.fields)
    }
}

import AsyncHTTPClient
import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import NIOCore
import NIOHTTP1
import Testing

@Suite("latchkey login against the development provider")
struct CLILoginTests: DevProviderCLITest {
    @Test("login --device shows the code on standard error and signs in once it is approved")
    func deviceLogin() async throws {
        let (dev, device) = try await Self.deviceFlow()
        defer { device.cleanUp() }

        let login = try await CLI.start(["--home", device.path, "--json", "login", "--device"])
        // The code is on standard error while the CLI polls.
        let prompt = try await login.standardError { $0.contains("\n(or open") }
        let code = try #require(prompt.split(separator: " ").dropFirst(3).first.map(String.init))
        #expect(prompt.hasPrefix("Enter the code \(code) at \(dev.url(.deviceVerification).absoluteString)"))
        try await Self.approve(code, at: dev)
        let finished = try await login.finish()
        #expect(finished.status == 0)
        // With --json, the instructions are a document of their own, before the result's.
        let documents = try Self.documents(finished.stdout)
        #expect(documents.count == 2)
        #expect(documents.first??["action"] as? String == "enter_code")
        // RFC 8628's names, as the provider's own answer has them.
        #expect(documents.first??["user_code"] as? String == code)
        #expect(documents.first??["verification_uri"] as? String == dev.url(.deviceVerification).absoluteString)
        #expect(documents.first??["verification_uri_complete"] as? String != nil)
        let expiresIn = try #require(documents.first??["expires_in"] as? Double)
        #expect(expiresIn > 0 && expiresIn <= 600)
        #expect(documents.last??["account"] as? String == "alice")
        await dev.stop()
    }

    @Test("login --device with standard error captured (a helper run by git or an IDE): the code reaches the terminal")
    func deviceCodeOnTerminal() async throws {
        let (dev, device) = try await Self.deviceFlow()
        let folder = try TemporaryFolder()
        defer {
            device.cleanUp()
            folder.cleanUp()
        }
        // util-linux's script(1) runs the command on a terminal of its own, which becomes its
        // controlling terminal (/dev/tty), and copies what appears there to its standard output;
        // the command's standard error goes to a file nobody reads.
        let captured = folder.file("stderr")
        let command = "'\(CLI.binary.path)' --home '\(device.path)' login --device 2>'\(captured)'"
        let login = try await ChildProcess.start(
            URL(fileURLWithPath: "/usr/bin/script"), ["-qec", command, "/dev/null"], environment: CLI.environment())
        let shown = try await login.standardOutput { $0.contains("(or open") }
        let words = try #require(
            shown.range(of: "Enter the code ").map { shown[$0.upperBound...].split(separator: " ") })
        let code = try #require(words.first.map(String.init))
        try await Self.approve(code, at: dev)
        let finished = try await login.finish()
        #expect(finished.status == 0, "\(finished.stdout)")
        let stderr = try String(contentsOfFile: captured, encoding: .utf8)
        #expect(stderr.contains("Enter the code \(code)"), "standard error has it too")
        await dev.stop()
    }

    /// A provider that polls device codes every second, added on a new device.
    static func deviceFlow() async throws -> (DevProvider, Device) {
        var configuration = DevProviderConfiguration.default
        configuration.devicePollingInterval = 1
        let dev = try await DevProvider.start(configuration: configuration, signingKeys: SharedSigningKeys.get())
        let device = try Device()
        _ = try await device.run(
            "provider", "add", "dev", "--allow-password-grant", "--issuer", dev.issuer.absoluteString, "--client-id",
            "latchkey-cli")
        return (dev, device)
    }

    /// The JSON documents of `--json` output, one per line.
    static func documents(_ output: String) throws -> [[String: Any]?] {
        try output.split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    /// Approves the device code `code` as alice, on the provider's verification page.
    static func approve(_ code: String, at dev: DevProvider) async throws {
        var request = HTTPClientRequest(url: dev.url(.deviceVerification).absoluteString)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(
            ByteBuffer(string: "user_code=\(code)&username=alice&password=alice-password&action=approve"))
        #expect(try await HTTPClient.shared.execute(request, timeout: .seconds(10)).status == .ok)
    }

    /// Posts the development provider's sign-in form for the authorization request `url` as
    /// `username`, and returns where the provider sends the browser (not followed).
    static func signIn(at url: URLComponents, dev: DevProvider, username: String, password: String)
        async throws -> String
    {
        var form = URLComponents()
        form.queryItems =
            (url.queryItems ?? []) + [
                URLQueryItem(name: "username", value: username), URLQueryItem(name: "password", value: password),
            ]
        var request = HTTPClientRequest(url: dev.url(.authorization).absoluteString)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(
            ByteBuffer(string: form.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B") ?? ""))
        let noRedirects = HTTPClient(
            eventLoopGroupProvider: .singleton,
            configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))
        defer { _ = noRedirects.shutdown() }
        let signedIn = try await noRedirects.execute(request, timeout: .seconds(10))
        return try #require(signedIn.headers.first(name: "Location"))
    }

    /// Plays the browser: posts the development provider's sign-in form for `url`, follows the
    /// redirect to the loopback listener, and returns the page it shows.
    static func playBrowser(at url: URLComponents, dev: DevProvider, username: String, password: String)
        async throws -> String
    {
        let location = try await signIn(at: url, dev: dev, username: username, password: password)
        #expect(location.hasPrefix("http://127.0.0.1:"))
        let noRedirects = HTTPClient(
            eventLoopGroupProvider: .singleton,
            configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))
        defer { _ = noRedirects.shutdown() }
        let callback = try await noRedirects.execute(HTTPClientRequest(url: location), timeout: .seconds(10))
        #expect(callback.status == .ok)
        return String(buffer: try await callback.body.collect(upTo: 1 << 16))
    }

    @Test("login --browser opens $BROWSER with the URL (and prints it); --no-browser only prints it")
    func browserOpens() async throws {
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        let device = try Device()
        let folder = try TemporaryFolder()
        defer {
            device.cleanUp()
            folder.cleanUp()
        }
        _ = try await device.run(
            "provider", "add", "dev", "--issuer", dev.issuer.absoluteString, "--client-id", "latchkey-cli")
        let recording = try RecordingBrowser(in: folder)
        let (opened, browser) = (recording.opened, recording.command)

        let login = try await CLI.start(
            ["--home", device.path, "login", "--browser", "--timeout", "30"],
            environment: ["BROWSER": "/nonexistent/browser:\(browser)"])
        let prompt = try await login.standardError { $0.contains("(opened with") }
        #expect(prompt.contains("(opened with \(browser))"))
        while !FileManager.default.fileExists(atPath: opened) { try await Task.sleep(for: .milliseconds(20)) }
        let url = try String(contentsOfFile: opened, encoding: .utf8)
        #expect(prompt.contains(url), "the URL is printed too")
        let page = try await Self.playBrowser(
            at: try #require(URLComponents(string: url)), dev: dev, username: "alice", password: "alice-password")
        #expect(page.contains("Signed in") && page.contains("close this window"))
        #expect(try await login.finish().status == 0)

        try FileManager.default.removeItem(atPath: opened)
        let printing = try await CLI.start(
            ["--home", device.path, "login", "--browser", "--no-browser", "--timeout", "30"],
            environment: ["BROWSER": browser])
        let printed = try await printing.standardError { $0.components(separatedBy: "\n").count >= 3 }
        let shown = try #require(URLComponents(string: printed.components(separatedBy: "\n")[1]))
        _ = try await Self.playBrowser(at: shown, dev: dev, username: "bob", password: "bob-password")
        #expect(try await printing.finish().status == 0)
        #expect(!printed.contains("(opened with"))
        #expect(!FileManager.default.fileExists(atPath: opened), "--no-browser opened nothing")
        await dev.stop()
    }

    @Test("login --browser prints the URL to open, and signs in when the browser comes back")
    func browserLogin() async throws {
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        let device = try Device()
        defer { device.cleanUp() }
        _ = try await device.run(
            "provider", "add", "dev", "--allow-password-grant", "--issuer", dev.issuer.absoluteString, "--client-id",
            "latchkey-cli")
        let login = try await CLI.start([
            "--home", device.path, "--json", "login", "--browser", "--no-browser", "--timeout", "30",
        ])
        let prompt = try await login.standardError { $0.components(separatedBy: "\n").count >= 3 }
        let lines = prompt.components(separatedBy: "\n")
        #expect(lines.first == "Open this URL to sign in:")
        let url = try #require(URLComponents(string: lines.count > 1 ? lines[1] : ""))
        #expect(url.queryItems?.contains { $0.name == "code_challenge_method" && $0.value == "S256" } == true)
        let callback = try await Self.playBrowser(at: url, dev: dev, username: "bob", password: "bob-password")
        #expect(callback.hasPrefix("Signed in."))
        let finished = try await login.finish()
        #expect(finished.status == 0)
        let documents = try Self.documents(finished.stdout)
        #expect(documents.count == 2)
        #expect(documents.first??["action"] as? String == "open")
        #expect(documents.first??["url"] as? String == lines[1], "the URL to open, as a document first")
        #expect(documents.last??["account"] as? String == "bob")
        await dev.stop()
    }

    @Test("--password-stdin on a terminal asks without echoing the password")
    func passwordWithoutEcho() async throws {
        try await withDevices { _, a, _ in
            let command = "'\(CLI.binary.path)' --home '\(a.path)' login --username alice --password-stdin"
            let script = try await ChildProcess.start(
                URL(fileURLWithPath: "/usr/bin/script"), ["-qec", command, "/dev/null"], environment: CLI.environment())
            // The terminal shows what the program writes and what the terminal echoes.
            _ = try await script.standardOutput { $0.contains("Password:") }
            script.write("alice-password\n")
            let run = CLI.Run(try await script.finish())
            #expect(run.status == 0, "\(run.stdout)")
            #expect(run.stdout.contains("Signed in as alice"))
            #expect(!run.stdout.contains("alice-password"), "the password never shows on the terminal")
        }
    }
}

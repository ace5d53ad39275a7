import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// `login --browser --paste`: no port bound; the URL the browser was sent to is pasted on
/// standard input, and checked as a received redirect is.
@Suite("latchkey login --browser --paste")
struct CLIPasteTests {
    /// A provider and a device with it added.
    static func setUp() async throws -> (DevProvider, Device) {
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        let device = try Device()
        let added = try await device.run(
            "provider", "add", "dev", "--issuer", dev.issuer.absoluteString, "--client-id", "latchkey-cli")
        #expect(added.status == 0, "\(added.stderr)")
        return (dev, device)
    }

    /// Starts the paste sign-in and returns it with the URL it asked to open (its first line on
    /// standard output, with --json).
    static func start(_ device: Device, _ extra: [String] = [], method: [String] = ["--browser", "--paste"])
        async throws -> (ChildProcess, URLComponents)
    {
        let login = try await ChildProcess.start(
            CLI.binary, ["--home", device.path, "--json", "login"] + method + extra,
            environment: CLI.environment(), input: nil)
        let first = try await login.standardOutput { $0.contains("\n") }
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(first.prefix { $0 != "\n" }.utf8)) as? [String: Any])
        #expect(document["action"] as? String == "open")
        let text = try #require(document["url"] as? String)
        let url = try #require(URLComponents(string: text))
        return (login, url)
    }

    @Test(
        "the URL goes out first as JSON, with the login hint; the pasted redirect is redeemed, and no port is bound (--paste alone is the browser sign-in's too)",
        arguments: [["--browser", "--paste"], ["--paste"]])
    func pasted(method: [String]) async throws {
        let (dev, device) = try await Self.setUp()
        defer { device.cleanUp() }
        let (login, url) = try await Self.start(device, ["--login-hint", "alice@example.com"], method: method)
        let redirect = url.queryItems?.first { $0.name == "redirect_uri" }?.value
        #expect(redirect == "http://127.0.0.1/callback", "no port: nothing listens")
        #expect(url.queryItems?.first { $0.name == "login_hint" }?.value == "alice@example.com")
        let location = try await CLILoginTests.signIn(at: url, dev: dev, username: "alice", password: "alice-password")
        #expect(location.hasPrefix("http://127.0.0.1/callback?"))
        login.write(location + "\n")
        let finished = try await login.finish()
        #expect(finished.status == 0, "\(finished.stderr)")
        #expect(
            finished.stdout.split(separator: "\n").last?.contains("\"account\":\"alice\"") == true, "\(finished.stdout)"
        )
        let token = try await device.run("token")
        #expect(token.status == 0, "\(token.stderr)")
        await dev.stop()
    }

    @Test(
        "a changed state, a foreign iss, an error answer, two codes, no URL, another address or 1 MB: refused with a message, nothing sent, nothing stored"
    )
    func refused() async throws {
        let (dev, device) = try await Self.setUp()
        defer { device.cleanUp() }
        typealias Mangle = (String) -> String
        func replacing(_ name: String, with value: String) -> Mangle {
            { location in
                var components = URLComponents(string: location)!
                components.queryItems = components.queryItems?.map {
                    $0.name == name ? URLQueryItem(name: name, value: value) : $0
                }
                return components.string!
            }
        }
        let cases: [(String, Mangle, Int32, String)] = [
            ("changed state", replacing("state", with: "other"), 2, "state"),
            ("foreign iss", replacing("iss", with: "https://attacker.example"), 1, "another issuer"),
            ("error answer", { $0.replacingOccurrences(of: "code=", with: "error=access_denied&x=") }, 1, "refused"),
            ("two codes", { $0 + "&code=second" }, 1, "more than once"),
            ("not a URL", { _ in "hello there" }, 2, "not a URL"),
            (
                "another address", { $0.replacingOccurrences(of: "127.0.0.1/callback", with: "127.0.0.1:9/elsewhere") },
                2, "not this sign-in's redirect"
            ),
            ("1 MB", { _ in String(repeating: "a", count: 1 << 20) }, 2, "longer than"),
        ]
        for (name, mangle, status, says) in cases {
            let (login, url) = try await Self.start(device)
            let location = try await CLILoginTests.signIn(
                at: url, dev: dev, username: "alice", password: "alice-password")
            let tokenRequests = dev.faults.count(.token)
            login.write(mangle(location) + "\n")
            let finished = try await login.finish()
            #expect(finished.status == status, "\(name): \(finished.stderr)")
            #expect(finished.stderr.contains(says), "\(name): \(finished.stderr)")
            #expect(dev.faults.count(.token) == tokenRequests, "\(name): a token request was sent")
        }
        let accounts = try await device.run("accounts", "--json")
        #expect(accounts.stdout.contains("alice") == false, "nothing stored: \(accounts.stdout)")
        await dev.stop()
    }
}

import Foundation
import LatchkeyTestSupport
import Testing

/// The project's scripts folder, found from this file's place in the package.
enum Scripts {
    static var folder: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("scripts")
    }

    static func python(_ script: String) -> (URL, [String]) {
        (URL(fileURLWithPath: "/usr/bin/env"), ["python3", folder.appendingPathComponent(script).path])
    }

    /// Whether python3 imports `modules` (comma separated): for a suite's `.enabled(if:)`.
    static func pythonCanImport(_ modules: String) -> Bool {
        let check = Process()
        check.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        check.arguments = ["python3", "-c", "import \(modules)"]
        check.standardOutput = FileHandle.nullDevice
        check.standardError = FileHandle.nullDevice
        guard (try? check.run()) != nil else { return false }
        check.waitUntilExit()
        return check.terminationStatus == 0
    }
}

/// An OAuth-protected MCP server of the Python `mcp` SDK (`scripts/mcp/protected_server.py`)
/// on loopback, whose tokens come from the authorization server at `issuer`.
struct PythonMCPServer {
    let process: ChildProcess
    let endpoint: URL

    /// Whether the Python MCP SDK is installed (`scripts/install-deps` installs it): asked of
    /// python3 once, when the suites are planned.
    static let isAvailable = Scripts.pythonCanImport("mcp.server.mcpserver, mcp.client.stdio")

    static func start(
        issuer: URL, client: String, secret: String, requiring scopes: [String] = [], jsonResponse: Bool = false,
        port: Int = 0
    ) async throws -> PythonMCPServer {
        let (python, arguments) = Scripts.python("mcp/protected_server.py")
        var options = ["--issuer", issuer.absoluteString, "--client", client, "--secret", secret]
        for scope in scopes { options += ["--scope", scope] }
        if jsonResponse { options.append("--json-response") }
        if port != 0 { options += ["--port", "\(port)"] }
        let process = try await ChildProcess.start(python, arguments + options)
        let first = try await process.standardOutput(until: { $0.contains("\n") })
        let line = try #require(first.split(separator: "\n").first.map(String.init), "the MCP server printed no URL")
        return PythonMCPServer(process: process, endpoint: try #require(URL(string: line)))
    }

    func stop() async {
        process.send(signal: SIGTERM)
        _ = try? await process.finish()
    }
}

/// A real MCP client (the Python `mcp` SDK's stdio client, `scripts/mcp/client.py`) that starts
/// `latchkey mcp-proxy` as its server, lists the tools and calls them.
struct PythonMCPClient {
    /// What one client run reports.
    struct Report {
        var tools: [String]
        var answers: [String]
        var errors: [String]
        var whoami: String?
        /// The pages the proxy asked the client to show (URL-mode elicitation): mode, url, message.
        var elicited: [[String: String]]
        var stderr: String
        var status: Int32
    }

    /// Starts a client of `latchkey --home HOME mcp-proxy URL PROXY_ARGUMENTS`; with `gate`,
    /// one that waits at every `every`-th call for the test (see `scripts/mcp/client.py`).
    static func start(
        device: Device, endpoint: URL, calls: Int, pause: Double = 0, text: String = "hello",
        gate: (folder: String, every: Int)? = nil, elicit: (folder: String, answer: String)? = nil,
        proxyArguments: [String] = [], environment: [String: String] = [:]
    ) async throws -> ChildProcess {
        let (python, arguments) = Scripts.python("mcp/client.py")
        let gating =
            (gate.map { ["--gate", $0.folder, "--every", "\($0.every)"] } ?? [])
            + (elicit.map { ["--elicit", $0.folder, "--elicitation-answer", $0.answer] } ?? [])
        let client =
            ["--calls", "\(calls)", "--pause", "\(pause)", "--text", text] + gating + [
                "--", CLI.binary.path, "--home", device.path, "mcp-proxy", endpoint.absoluteString,
            ]
        return try await ChildProcess.start(
            python, arguments + client + proxyArguments, environment: CLI.environment(environment))
    }

    static func report(of process: ChildProcess) async throws -> Report {
        let result = try await process.finish()
        let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        let report = try #require(object, "the client printed no report: \(result.stderr)")
        return Report(
            tools: report["tools"] as? [String] ?? [], answers: report["answers"] as? [String] ?? [],
            errors: report["errors"] as? [String] ?? [], whoami: report["whoami"] as? String,
            elicited: (report["elicited"] as? [[String: Any]] ?? []).map { $0.compactMapValues { $0 as? String } },
            stderr: result.stderr, status: result.status)
    }

    /// Runs a client of 30 calls whose world `change` changes after its tenth (its gates, in
    /// `folder`, hold it there meanwhile), and reports.
    static func run(
        device: Device, endpoint: URL, pause: Double = 0, elicit: (folder: String, answer: String)? = nil,
        proxyArguments: [String] = [], changingAfterTenCalls change: () async throws -> Void
    ) async throws -> Report {
        let gate = try TemporaryFolder()
        defer { gate.cleanUp() }
        let client = try await start(
            device: device, endpoint: endpoint, calls: 30, pause: pause, text: "c", gate: (gate.path, 10),
            elicit: elicit, proxyArguments: proxyArguments)
        // A client that stopped early must not keep waiting after a failure.
        defer { [0, 10, 20].forEach(gate.openGate) }
        gate.openGate(0)
        try await gate.waitForGate(of: "c", at: 10)
        try await change()
        gate.openGate(10)
        gate.openGate(20)
        return try await report(of: client)
    }

    static func run(
        device: Device, endpoint: URL, calls: Int, pause: Double = 0, text: String = "hello",
        proxyArguments: [String] = [], environment: [String: String] = [:]
    ) async throws -> Report {
        try await report(
            of: start(
                device: device, endpoint: endpoint, calls: calls, pause: pause, text: text,
                proxyArguments: proxyArguments, environment: environment))
    }
}

extension PythonMCPClient.Report {
    /// Expects the client ended, and the calls after a grant ended (20 and whoami) failed, each
    /// naming `login`.
    func expectCallsFailed(naming login: String) {
        #expect(status == 0, "the client ended: no call hung")
        #expect(errors.count >= 20, "the calls after the grant ended failed: \(errors.count)")
        for error in errors { #expect(error.contains(login), "\(error)") }
    }
}

/// The gates of MCP clients started with `gate:` (see `scripts/mcp/client.py`): before every
/// K-th call a client writes how many calls it made to the file named after its `text`, and
/// waits for `go-INDEX`. A test changes the world between two calls, never during one.
extension TemporaryFolder {
    /// How many calls a gated MCP client named `name` made when it last waited.
    func progress(of name: String) -> Int? {
        (try? String(contentsOfFile: file(name), encoding: .utf8)).flatMap { Int($0) }
    }

    /// Lets the clients waiting at call `index` go on.
    func openGate(_ index: Int) {
        _ = FileManager.default.createFile(atPath: file("go-\(index)"), contents: nil)
    }

    /// Waits until the client `name` waits at call `index`: two minutes at most.
    func waitForGate(of name: String, at index: Int) async throws {
        for _ in 0..<6_000 where progress(of: name) != index { try await Task.sleep(for: .milliseconds(20)) }
        try #require(progress(of: name) == index, "the client \(name) reached call \(index)")
    }
}

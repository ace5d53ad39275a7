import Foundation
import HTTPTypes
import Latchkey
import LatchkeyDevProvider
import LatchkeyHTTP
import LatchkeyMCP
import LatchkeySQLite

/// What `latchkey mcp-proxy` adds to a message: the time from a message handed to the proxy to
/// the server's answer delivered, against the same request sent directly with the token
/// (`Credential.send`), in alternating rounds against the development provider's protected
/// resource; then twenty proxies, each with its own store over one SQLite file (as twenty
/// processes have), calling through three expiries of the access token: refreshes made (goal:
/// one per expiry) and calls failed (goal: none).
@MainActor
func mcpFigures() async throws {
    let clock = OffsetClock()
    var configuration = DevProviderConfiguration.default
    configuration.protectedResources = [.init(path: "/mcp")]
    let dev = try await DevProvider.start(configuration: configuration, now: { clock.date })
    defer { Task { await dev.stop() } }
    let endpoint = dev.issuer.appendingPathComponent("mcp")
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-bench-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let path = folder.appendingPathComponent("credentials.sqlite").path
    let provider = OpenIDProvider(
        configuration: OpenIDProviderConfiguration(
            issuer: dev.issuer, clientID: "latchkey-cli", scopes: scopes, allowsPasswordGrant: true,
            resources: [endpoint]),
        transport: transport, clock: clock)
    let store = try await CredentialStore.sqlite(at: path)
    await store.register(provider)
    let credential = try await provider.signIn(.password(username: "alice", password: "alice-password"), into: store)
    let message = Data(#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}"#.utf8)

    // One proxy, its deliveries counted off a stream.
    let (delivered, arrival) = AsyncStream<Data>.makeStream()
    let proxy = MCPProxy(
        configuration: .init(endpoint: endpoint, resource: endpoint, listensForServerMessages: false),
        sender: credential, deliver: { arrival.yield($0) })
    var answers = delivered.makeAsyncIterator()
    var request = HTTPRequest(method: .post, url: endpoint)
    request.headerFields[.contentType] = "application/json"
    var direct: [Double] = []
    var proxied: [Double] = []
    for _ in 0..<(quick ? 50 : 500) {
        var start = ContinuousClock.now
        _ = try await credential.send(request, body: message, resource: endpoint, through: transport)
        direct.append(milliseconds(ContinuousClock.now - start))
        start = ContinuousClock.now
        await proxy.forward(message)
        _ = await answers.next()
        proxied.append(milliseconds(ContinuousClock.now - start))
    }
    await proxy.finish()
    record("mcp.direct.median", percentile(direct, 0.5), "ms")
    record("mcp.proxied.median", percentile(proxied, 0.5), "ms")
    record("mcp.proxied.p99", percentile(proxied, 0.99), "ms")
    record("mcp.overhead.median", percentile(proxied, 0.5) - percentile(direct, 0.5), "ms")

    // Twenty proxies through three expiries.
    let proxies = 20
    let rounds = quick ? 3 : 10
    dev.faults.resetCounters()
    let (answered, counted) = AsyncStream<Bool>.makeStream()
    var all: [MCPProxy] = []
    for _ in 0..<proxies {
        let own = try await CredentialStore.sqlite(at: path)
        await own.register(provider)
        let handle = await provider.credential(credential.id, in: own)
        all.append(
            MCPProxy(
                configuration: .init(
                    endpoint: endpoint, resource: endpoint, listensForServerMessages: false,
                    report: { _ in counted.yield(false) }),
                sender: handle, deliver: { counted.yield(!String(decoding: $0, as: UTF8.self).contains("error")) }))
    }
    var failed = 0
    var outcomes = answered.makeAsyncIterator()
    for expiry in 0..<3 {
        clock.advance(Double(dev.configuration.accessTokenLifetime + 1))
        for _ in 0..<rounds {
            for proxy in all { await proxy.forward(message) }
            for _ in 0..<proxies where await outcomes.next() == false { failed += 1 }
        }
        _ = expiry
    }
    for proxy in all { await proxy.finish() }
    record("mcp.twenty_proxies.refreshes_per_expiry", Double(dev.faults.count("token.refresh_token")) / 3, "count")
    record("mcp.twenty_proxies.calls_failed", Double(failed), "count")
}

import Foundation
import LatchkeyDevProvider

#if canImport(Glibc)
    import Glibc
#endif

/// The `latchkey` binaries beside this one, as fresh processes: what git, kubectl and a shell
/// prompt pay on every call with a valid token (time and peak memory), the whole tool's own
/// start, and eight processes on one stale credential (one refresh between them).
@MainActor
func cliFigures() async throws {
    let folder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    let latchkey = folder.appendingPathComponent("latchkey").path
    let full = folder.appendingPathComponent("latchkey-full").path
    guard FileManager.default.isExecutableFile(atPath: latchkey), FileManager.default.isExecutableFile(atPath: full)
    else {
        FileHandle.standardError.write(
            Data(
                "latchkey-bench: build latchkey and latchkey-full too (swift build -c release --product latchkey --product latchkey-full)\n"
                    .utf8))
        return
    }
    let dev = try await DevProvider.start()
    let home = FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-bench-home-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: home) }
    let environment = ProcessInfo.processInfo.environment.merging(["LATCHKEY_HOME": home.path]) { _, new in new }
    @Sendable func run(_ arguments: [String], input: String = "", binary: String = latchkey) -> ProcessFigure {
        measureProcess(binary, arguments, input: Array(input.utf8), environment: environment)
    }
    _ = run([
        "provider", "add", "dev", "--issuer", dev.issuer.absoluteString, "--client-id", "latchkey-cli",
        "--allow-password-grant", "--git-host", "git.bench.example",
    ])
    _ = run(["login", "--username", "alice", "--password-stdin"], input: "alice-password\n")
    let rounds = quick ? 5 : 30
    let git = "protocol=https\nhost=git.bench.example\n\n"
    var fresh = 0.0
    // Peak memory comes from GNU time (Debian's `time`): this process's own children start as
    // vfork(2) copies of it, and the kernel counts its memory in theirs.
    let gnuTime = FileManager.default.isExecutableFile(atPath: "/usr/bin/time") ? "/usr/bin/time" : nil
    if gnuTime == nil {
        FileHandle.standardError.write(
            Data("latchkey-bench: no peak memory figures without /usr/bin/time (apt-get install time)\n".utf8))
    }
    /// The median peak memory of `binary ARGUMENTS`, in MiB.
    func peakMemory(_ binary: String, _ arguments: [String], input: String, environment: [String: String]) -> Double? {
        guard let gnuTime else { return nil }
        let report = home.appendingPathComponent("peak-\(UUID().uuidString)").path
        let peaks = (0..<rounds).compactMap { _ -> Double? in
            guard
                measureProcess(
                    gnuTime, ["-f", "%M", "-o", report, binary] + arguments, input: Array(input.utf8),
                    environment: environment
                ).status == 0,
                let text = try? String(contentsOfFile: report, encoding: .utf8),
                let kilobytes = Double(text.trimmingCharacters(in: .whitespacesAndNewlines))
            else { return nil }
            return kilobytes / 1_024
        }
        return percentile(peaks, 0.5)
    }
    for (name, arguments, input, binary) in [
        ("cli.token", ["token"], "", latchkey), ("cli.credential_git", ["credential", "git", "get"], git, latchkey),
        ("cli.credential_kubectl", ["credential", "kubectl"], "", latchkey),
        ("cli.full_version", ["--version"], "", full),
    ] {
        let figures = (0..<rounds).map { _ in run(arguments, input: input, binary: binary) }.filter { $0.status == 0 }
        let time = percentile(figures.map(\.milliseconds), 0.5)
        if name == "cli.token" { fresh = time }
        record("\(name).fresh_process.median", time, "ms")
        if let peak = peakMemory(binary, arguments, input: input, environment: environment) {
            record("\(name).fresh_process.peak_memory", peak, "MiB")
        }
    }

    // A refreshing call (the provider's tokens expire as they are issued: every call refreshes),
    // handed over to latchkey-full, and answered through `latchkey agent` for the same store.
    await dev.setAccessTokenLifetime(0)
    _ = run(["refresh"])
    let socket = home.appendingPathComponent("agent.sock").path
    let agent = spawnProcess(
        full, ["agent", "--foreground", "--socket", socket], input: [], environment: environment)
    for _ in 0..<200 where !FileManager.default.fileExists(atPath: socket) {
        try await Task.sleep(for: .milliseconds(20))
    }
    for (name, extra) in [("handed_over", [String: String]()), ("agent", ["LATCHKEY_AGENT_SOCK": socket])] {
        let with = environment.merging(extra) { _, new in new }
        let figures = (0..<rounds).map { _ in
            measureProcess(latchkey, ["token"], input: [], environment: with)
        }.filter { $0.status == 0 }
        record("cli.token.refreshing.\(name).median", percentile(figures.map(\.milliseconds), 0.5), "ms")
        if let peak = peakMemory(latchkey, ["token"], input: "", environment: with) {
            record("cli.token.refreshing.\(name).peak_memory", peak, "MiB")
        }
    }
    // A valid token through the agent: the calling process opens no store.
    await dev.setAccessTokenLifetime(3_600)
    _ = run(["refresh"])
    let viaAgent = environment.merging(["LATCHKEY_AGENT_SOCK": socket]) { _, new in new }
    let valid = (0..<rounds).map { _ in measureProcess(latchkey, ["token"], input: [], environment: viaAgent) }
    record("cli.token.valid.agent.median", percentile(valid.filter { $0.status == 0 }.map(\.milliseconds), 0.5), "ms")
    if let peak = peakMemory(latchkey, ["token"], input: "", environment: viaAgent) {
        record("cli.token.valid.agent.peak_memory", peak, "MiB")
    }
    if let agent {
        kill(agent.id, SIGTERM)
        _ = waitForProcess(agent)
    }

    // Eight processes at once on a stale credential: one refresh between them (the store's
    // refresh lease), and what the wait for it adds to each process. All are started, then all
    // are waited for: a thread blocked in waitpid per process would start them in waves.
    func runConcurrently(_ count: Int, _ arguments: [String]) -> [ProcessFigure] {
        let started = (0..<count).map { _ in spawnProcess(latchkey, arguments, input: [], environment: environment) }
        return started.map { $0.map(waitForProcess) ?? ProcessFigure(status: -1, milliseconds: .nan) }
    }
    var requests: [Double] = []
    var failures = 0
    var stale: [Double] = []
    for _ in 0..<(quick ? 2 : 5) {
        await dev.setAccessTokenLifetime(2)
        _ = run(["refresh"])
        await dev.setAccessTokenLifetime(3_600)
        try await Task.sleep(for: .milliseconds(1_200))  // stale once within half its lifetime
        dev.faults.resetCounters()
        let results = runConcurrently(8, ["token"])
        requests.append(Double(dev.faults.count("token.refresh_token")))
        failures += results.filter { $0.status != 0 }.count
        stale += results.map(\.milliseconds)
    }
    record("cli.token.parallel8.refresh_requests.max", requests.max() ?? .nan, "count")
    record("cli.token.parallel8.failures", Double(failures), "count")
    record("cli.token.parallel8.process.median", percentile(stale, 0.5), "ms")
    record("cli.token.parallel8.added_latency.median", percentile(stale, 0.5) - fresh, "ms")

    // A build system's worth: 128 processes at once, on a stale token (one refresh between
    // them) and on a valid one (each answered by `latchkey` alone): the wall time for all of
    // them and each process's time.
    for stalePass in [true, false] {
        var walls: [Double] = []
        var each: [Double] = []
        var refreshes: [Double] = []
        var failed = 0
        for _ in 0..<(quick ? 1 : 3) {
            if stalePass {
                await dev.setAccessTokenLifetime(2)
                _ = run(["refresh"])
                await dev.setAccessTokenLifetime(3_600)
                try await Task.sleep(for: .milliseconds(1_200))
            }
            dev.faults.resetCounters()
            let start = ContinuousClock.now
            let results = runConcurrently(128, ["token"])
            walls.append(milliseconds(ContinuousClock.now - start))
            each += results.map(\.milliseconds)
            refreshes.append(Double(dev.faults.count("token.refresh_token")))
            failed += results.filter { $0.status != 0 }.count
        }
        let name = stalePass ? "cli.token.parallel128.stale" : "cli.token.parallel128.valid"
        record("\(name).wall.median", percentile(walls, 0.5), "ms")
        record("\(name).process.p99", percentile(each, 0.99), "ms")
        record("\(name).refresh_requests.max", refreshes.max() ?? .nan, "count")
        record("\(name).failures", Double(failed), "count")
    }

    // 32 `latchkey api` processes at once with a DPoP-bound account, at a server whose nonce
    // stays and at one that moves it on at every use (the callers then take turns).
    _ = run([
        "provider", "add", "bound", "--issuer", dev.issuer.absoluteString, "--client-id", "latchkey-cli", "--dpop",
        "--allow-password-grant",
    ])
    _ = run(["login", "--provider", "bound", "--username", "bob", "--password-stdin"], input: "bob-password\n")
    for (name, rotation) in [("stable_nonce", 1_000_000), ("rotating_nonce", 1)] {
        await dev.requireDPoPNonces(rotatingAfter: rotation)
        var walls: [Double] = []
        var failed = 0
        for _ in 0..<(quick ? 2 : 5) {
            let start = ContinuousClock.now
            let results = runConcurrently(32, ["api", "--account", "bob", dev.url(.userinfo).absoluteString])
            walls.append(milliseconds(ContinuousClock.now - start))
            failed += results.filter { $0.status != 0 }.count
        }
        record("cli.api.parallel32.\(name).wall.median", percentile(walls, 0.5), "ms")
        record("cli.api.parallel32.\(name).failures", Double(failed), "count")
    }
    await dev.stop()
    try await documentRequests(latchkey: latchkey)
}

/// Provider requests of one `latchkey refresh` (a process of its own) while the provider's
/// documents are fresh in the store, stale (past their 1 s lifetime: used while revalidated),
/// and uncacheable (`max-age=0`: fetched every time).
@MainActor
func documentRequests(latchkey: String) async throws {
    for (name, maxAge, pause) in [("fresh", 3_600, 0.0), ("stale", 1, 1.3), ("uncacheable", 0, 0.0)] {
        var configuration = DevProviderConfiguration.default
        configuration.documentMaxAge = maxAge
        let dev = try await DevProvider.start(configuration: configuration)
        let home = FileManager.default.temporaryDirectory.appendingPathComponent(
            "latchkey-bench-docs-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: home) }
        let environment = ProcessInfo.processInfo.environment.merging(["LATCHKEY_HOME": home.path]) { _, new in new }
        func run(_ arguments: [String], input: String = "") -> ProcessFigure {
            measureProcess(latchkey, arguments, input: Array(input.utf8), environment: environment)
        }
        _ = run([
            "provider", "add", "dev", "--issuer", dev.issuer.absoluteString, "--client-id", "latchkey-cli",
            "--allow-password-grant",
        ])
        _ = run(["login", "--username", "alice", "--password-stdin"], input: "alice-password\n")
        var counts: [Double] = []
        for _ in 0..<(quick ? 2 : 5) {
            _ = run(["refresh"])
            if pause > 0 { try await Task.sleep(for: .milliseconds(Int(pause * 1_000))) }
            dev.faults.resetCounters()
            _ = run(["refresh"])
            counts.append(Double(dev.faults.counters.filter { !$0.key.contains(".") }.values.reduce(0, +)))
        }
        record("cli.refresh.documents_\(name).provider_requests.median", percentile(counts, 0.5), "count")
        await dev.stop()
    }
}

/// A process's exit status and wall time.
struct ProcessFigure: Sendable {
    var status: Int32
    var milliseconds: Double
}

/// Runs `binary ARGUMENTS` with `input` on standard input and its output discarded, and waits for it.
func measureProcess(_ binary: String, _ arguments: [String], input: [UInt8], environment: [String: String])
    -> ProcessFigure
{
    spawnProcess(binary, arguments, input: input, environment: environment).map(waitForProcess)
        ?? ProcessFigure(status: -1, milliseconds: .nan)
}

/// A process started by ``spawnProcess(_:_:input:environment:)``.
struct StartedProcess {
    var id: pid_t
    var start: ContinuousClock.Instant
}

/// Starts `binary ARGUMENTS` with `input` on standard input and its output discarded.
func spawnProcess(_ binary: String, _ arguments: [String], input: [UInt8], environment: [String: String])
    -> StartedProcess?
{
    var ends: [Int32] = [0, 0]
    guard pipe(&ends) == 0 else { return nil }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, ends[0], STDIN_FILENO)
    posix_spawn_file_actions_addclose(&actions, ends[1])
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0)
    let argv = ([binary] + arguments).map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { (argv + envp).forEach { free($0) } }
    let start = ContinuousClock.now
    var child = pid_t()
    let spawned = posix_spawn(&child, binary, &actions, nil, argv, envp)
    close(ends[0])
    if spawned == 0 { _ = input.withUnsafeBytes { write(ends[1], $0.baseAddress, $0.count) } }
    close(ends[1])
    return spawned == 0 ? StartedProcess(id: child, start: start) : nil
}

/// Waits for `process` to end: its exit status and the time since it was started.
func waitForProcess(_ process: StartedProcess) -> ProcessFigure {
    var status: Int32 = 0
    while waitpid(process.id, &status, 0) < 0, errno == EINTR {}
    let elapsed = milliseconds(ContinuousClock.now - process.start)
    return ProcessFigure(status: (status & 0x7f) == 0 ? (status >> 8) & 0xff : -1, milliseconds: elapsed)
}

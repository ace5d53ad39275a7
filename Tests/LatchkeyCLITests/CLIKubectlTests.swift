import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import Testing

/// `latchkey credential kubectl` as the exec credential plugin of the real `kubectl`, against a
/// stand-in API server that verifies ID tokens with the development provider's JWKS.
@Suite("latchkey as kubectl's exec credential plugin")
struct CLIKubectlTests {
    /// `kubectl`, where the machine has it (the project's scripts install it where missing).
    static var kubectl: URL? {
        ["/usr/bin/kubectl", "/usr/local/bin/kubectl"].first { FileManager.default.isExecutableFile(atPath: $0) }
            .map(URL.init(fileURLWithPath:))
    }

    @Test("kubectl gets a fresh ID token: 20 kubectl calls on an expiring one refresh once; after sign-out it says why")
    func kubectlPlugin() async throws {
        let kubectl = try #require(Self.kubectl, "kubectl is not installed: run scripts/install-deps")
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        let device = try Device()
        let folder = try TemporaryFolder()
        let server = try await KubeAPIServer.start(issuer: dev.issuer, clientID: "latchkey-cli", folder: folder)
        defer {
            device.cleanUp()
            folder.cleanUp()
        }
        #expect(
            try await device.run(
                "provider", "add", "dev", "--allow-password-grant", "--issuer", dev.issuer.absoluteString,
                "--client-id", "latchkey-cli"
            ).status == 0)
        // An ID token that lives 20 seconds: too little for kubectl (the plugin wants a minute).
        await dev.setIDTokenLifetime(20)
        #expect(
            try await device.run("login", "--username", "alice", "--password-stdin", input: "alice-password").status
                == 0)
        await dev.setIDTokenLifetime(3_600)

        let kubeconfig = folder.file("kubeconfig")
        try Data(
            """
            apiVersion: v1
            kind: Config
            clusters:
            - name: stand-in
              cluster:
                server: \(server.url)
                certificate-authority: \(server.certificatePath)
            users:
            - name: alice
              user:
                exec:
                  apiVersion: client.authentication.k8s.io/v1
                  command: \(Executables.latchkey.path)
                  args: ["--home", "\(device.path)", "credential", "kubectl"]
                  interactiveMode: Never
            contexts:
            - name: stand-in
              context: {cluster: stand-in, user: alice}
            current-context: stand-in

            """.utf8
        ).write(to: URL(fileURLWithPath: kubeconfig))
        let environment = ProcessInfo.processInfo.environment.merging(
            ["HOME": folder.path, "KUBECONFIG": kubeconfig]) { _, new in new }
        @Sendable func version() async throws -> ChildProcess.Result {
            try await ChildProcess.run(kubectl, ["get", "--raw", "/version"], environment: environment, input: "")
        }

        dev.faults.resetCounters()
        let results = try await AsyncGate.fanOut.run {
            try await withThrowingTaskGroup(of: ChildProcess.Result.self) { group in
                for _ in 0..<20 { group.addTask { try await version() } }
                var results: [ChildProcess.Result] = []
                for try await result in group { results.append(result) }
                return results
            }
        }
        for result in results {
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("v1.31.0-latchkey-stand-in"))
        }
        #expect(dev.faults.count("token.refresh_token") == 1)
        #expect(server.accepted.count == 1, "every kubectl sent the one refreshed ID token")
        #expect(server.refused == 0)

        // The plugin's own answer: an ExecCredential with the token and its expiry.
        let plugin = try await device.run(arguments: ["credential", "kubectl"])
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(plugin.stdout.utf8)) as? [String: Any])
        #expect(answer["kind"] as? String == "ExecCredential")
        #expect(answer["apiVersion"] as? String == "client.authentication.k8s.io/v1")
        let status = try #require(answer["status"] as? [String: String])
        #expect(status["token"].map { server.accepted.contains($0) } == true)
        #expect(status["expirationTimestamp"]?.hasSuffix("Z") == true)

        #expect(try await device.run("signout", "--yes").status == 0)
        let after = try await version()
        #expect(after.status != 0)
        #expect(after.stderr.contains("kubectl asked for a token, but there is no account"), "\(after.stderr)")
        await server.stop()
        await dev.stop()
    }
}

import AsyncHTTPClient
import Foundation
import LatchkeyDevProvider
import LatchkeyTestSupport
import NIOCore
import NIOHTTP1
import Testing

/// What the command-line tests against the development provider share: two homes (two devices)
/// with the provider added, and signing in.
protocol DevProviderCLITest {}

extension DevProviderCLITest {
    func withDevices(
        _ configuration: DevProviderConfiguration = .default, _ body: (DevProvider, Device, Device) async throws -> Void
    ) async throws {
        let dev = try await DevProvider.start(configuration: configuration, signingKeys: SharedSigningKeys.get())
        let a = try Device()
        let b = try Device()
        defer {
            a.cleanUp()
            b.cleanUp()
        }
        for device in [a, b] {
            let added = try await device.run(
                "provider", "add", "dev", "--allow-password-grant", "--issuer", dev.issuer.absoluteString,
                "--client-id", "latchkey-cli")
            #expect(added.status == 0, "\(added.stderr)")
        }
        do {
            try await body(dev, a, b)
        } catch {
            await dev.stop()
            throw error
        }
        await dev.stop()
    }

    /// Adds the provider again on `device`, as the one that answers git for `gitHost`.
    func answerGit(for gitHost: String, _ dev: DevProvider, on device: Device) async throws {
        #expect(try await device.run("provider", "remove", "dev").status == 0)
        let added = try await device.run(
            "provider", "add", "dev", "--allow-password-grant", "--issuer", dev.issuer.absoluteString,
            "--client-id", "latchkey-cli", "--git-host", gitHost)
        #expect(added.status == 0, "\(added.stderr)")
    }

    func login(_ device: Device, _ user: String, _ extra: String...) async throws -> CLI.Run {
        try await device.run(
            arguments: ["login", "--username", user, "--password-stdin"] + extra, input: "\(user)-password")
    }

    /// Signs alice in on `device` with an access token that has expired already (the provider
    /// issues it with a lifetime of 0: no test waits for a token to age), and lets every refresh
    /// from then on bring hour-long ones.
    func signInWithShortToken(_ dev: DevProvider, _ device: Device) async throws {
        await dev.setAccessTokenLifetime(0)
        let login = try await login(device, "alice")
        #expect(login.status == 0, "\(login.stderr)")
        await dev.setAccessTokenLifetime(3_600)
    }
}

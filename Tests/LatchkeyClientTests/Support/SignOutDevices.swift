import Foundation
import Latchkey
import LatchkeyDevProvider
import LatchkeyHTTP
import LatchkeySQLite
import LatchkeyStorageTesting
import LatchkeyTestSupport
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle
import Testing

/// Two "devices": two stores signed in to the same provider.
struct SignOutDevices {

    let dev: DevProvider
    let provider: OpenIDProvider
    let inspector: OpenIDProvider
    let a: CredentialStore
    let b: CredentialStore

    func signIn(_ store: CredentialStore, _ user: String = "alice") async throws -> Credential {
        try await provider.signIn(.password(username: user, password: "\(user)-password"), into: store)
    }

    /// Whether `token` is active, asked of the provider. A token that was never issued is a
    /// failure of the test, not "inactive": a sign-out test must not pass on a missing token.
    func isActive(_ token: String?) async throws -> Bool {
        let token = try #require(token, "this token was never issued")
        return try await inspector.introspect(token, kind: .accessToken).active
    }

    func stop() async { await dev.stop() }
}

/// What the sign-out and outbox tests share: two devices against one development provider.
protocol SignOutDevicesTest {}

extension SignOutDevicesTest {
    /// Two "devices": two stores signed in to the same provider.
    typealias Devices = SignOutDevices

    func withDevices(
        scopes: [String] = ["openid", "profile", "email", "offline_access", "device_sso"],
        clock: any LatchkeyClock = SystemClock(),
        storeA: CredentialStore? = nil,
        _ body: (Devices) async throws -> Void
    ) async throws {
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get(), now: clock.dateSource)
        let provider = OpenIDProvider(
            configuration: OpenIDProviderConfiguration(
                issuer: dev.issuer, clientID: "latchkey-cli", scopes: scopes, allowsPasswordGrant: true),
            transport: transport, logger: TraceLog.logger("provider"), clock: clock)
        let inspector = OpenIDProvider(
            configuration: OpenIDProviderConfiguration(
                issuer: dev.issuer, clientID: "latchkey-confidential",
                authentication: .basic(secret: "latchkey-confidential-secret"), allowsPasswordGrant: true),
            transport: transport)
        let devices = Devices(
            dev: dev, provider: provider, inspector: inspector,
            a: storeA
                ?? CredentialStore(storage: InMemoryCredentialStorage(), logger: TraceLog.logger("store"), clock: clock),
            b: CredentialStore(storage: InMemoryCredentialStorage(), logger: TraceLog.logger("store"), clock: clock))
        await devices.a.register(provider)
        await devices.b.register(provider)
        do {
            try await body(devices)
        } catch {
            await devices.stop()
            throw error
        }
        await devices.stop()
    }

    func status(_ result: SignOutResult, _ step: String) -> SignOutStep.Status? {
        result.steps.first { $0.kind.description == step }?.status
    }
}

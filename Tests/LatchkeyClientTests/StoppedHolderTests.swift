import Foundation
import Latchkey
import LatchkeyDevProvider
import LatchkeySQLite
import LatchkeyTestSupport
import Testing

/// A refresh holder that is stopped (Ctrl-Z, a suspended laptop) with its request in flight:
/// other processes wait at most the lease's term for it, and when it resumes it stores the
/// answer the provider sent meanwhile instead of losing the rotated refresh token.
@Suite("A stopped refresh holder")
struct StoppedHolderTests {
    @Test(
        "stopped past its deadline with the answer on its way, a holder keeps nobody waiting beyond its lease and stores the answer when resumed",
        .timeLimit(.minutes(TestTiming.minutes(2))))
    func resumedHolderStoresTheAnswer() async throws {
        let dev = try await DevProvider.start(signingKeys: SharedSigningKeys.get())
        defer { Task { await dev.stop() } }
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("credentials.sqlite")
        let store = try await CredentialStore.sqlite(at: path)
        let provider = OpenIDProvider(
            configuration: OpenIDProviderConfiguration(
                issuer: dev.issuer, clientID: "latchkey-cli", allowsPasswordGrant: true),
            transport: transport)
        let alice = try await provider.signIn(.password(username: "alice", password: "alice-password"), into: store)
        let first = try #require(try await alice.token.refreshToken)
        // The provider rotates the refresh token at once and holds its answer a moment: the
        // holder is stopped in that moment, and the answer reaches it while it cannot read.
        dev.faults.set(DevProviderFault(answerDelayMilliseconds: 500, remaining: 1), for: .token)
        dev.faults.resetCounters()
        let term = TestTiming.scaled(.seconds(2))
        let holder = try await ChildProcess.start(
            Executables.url("latchkey-store-worker"),
            ["refresh", path, dev.issuer.absoluteString, alice.id.rawValue, "\(Double(term.components.seconds))"])
        while dev.faults.count("token.refresh_token") == 0 { try await Task.sleep(for: .milliseconds(5)) }
        holder.send(signal: SIGSTOP)
        // The stopped holder renews nothing: its lease is taken once its row runs out, which
        // is after the holder's deadline (a tenth of the term before the lease's end).
        let taken = try await store.storage.withCredentialLease(
            for: alice.id, terms: LeaseTerms(duration: .seconds(30))
        ) {
            _ in true
        }
        #expect(taken)
        holder.send(signal: SIGCONT)
        let result = try await holder.finish()
        #expect(result.stdout == "refreshed\n", "\(result.stdout) \(result.stderr)")
        // What it stored is the live grant: the next refresh is accepted.
        let stored = try #require(try await store.credential(for: alice.id))
        #expect(stored.token.refreshToken != first)
        #expect(!stored.state.needsSignIn)
        let again = await store.credential(alice.id, provider: provider)
        _ = try await again.refresh()
    }
}

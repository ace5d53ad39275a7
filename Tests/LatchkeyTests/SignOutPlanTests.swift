import Foundation
import Latchkey
import NIOConcurrencyHelpers
import Testing

/// The sign-out plan as a table: what it decides from the options, the provider, the tokens and
/// each step's outcome. No network, no storage: the outcomes are handed in by a script.
@Suite("Sign-out plan")
struct SignOutPlanTests {
    /// What a row hands the plan at each step.
    struct Script: Sendable {
        var refresh: Result<Void, ProviderError> = .success(())
        var global: Result<Void, ProviderError> = .success(())
        /// The revocations that fail.
        var failing: Set<TokenKind> = []
        var endSession: Result<URL?, ProviderError> = .success(nil)
        var hookError: Bool = false
        /// Whether the outbox takes what is queued.
        var queueing: Bool = true
        var removal: Result<Bool, StorageError> = .success(true)
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var options: SignOutOptions
        var support: SignOutPlan.GlobalSupport?
        var tokens: Token = SignOutPlanTests.allTokens
        var script = Script()
        /// The actions the plan asks for, by name, in order.
        var actions: [String]
        /// Each step as `kind status`, in order.
        var steps: [String]
        /// The steps queued, and whether each waits for the global sign-out.
        var queued: [String] = []
        var stillSignedIn: SignOutError.Code?

        var testDescription: String { name }
    }

    static let start = Date(timeIntervalSince1970: 1_800_000_000)
    static let provider = ProviderIdentity(issuer: "https://op.example", clientID: "cli")
    static let allTokens = Token(
        accessToken: "SECRET-AT", refreshToken: "SECRET-RT", deviceSecret: "SECRET-DS", issuedAt: start,
        expiresAt: start.addingTimeInterval(3_600), provider: provider)
    static let expiredAccess = Token(
        accessToken: "SECRET-OLD-AT", refreshToken: "SECRET-RT", issuedAt: start.addingTimeInterval(-7_200),
        expiresAt: start.addingTimeInterval(-3_600), provider: provider)
    static let offline = ProviderError(.transport, endpoint: .revocation, reason: "offline")
    static let refused = ProviderError(.oauth, endpoint: .revocation, reason: "refused", status: 400)

    static func options(
        global: Bool = false, endSession: Bool = false, revoke: Bool = true, policy: SignOutPolicy = .alwaysLocal,
        hooks: Int = 0
    ) -> SignOutOptions {
        SignOutOptions(
            global: global, endProviderSession: endSession, revokeTokens: revoke, policy: policy,
            hooks: (0..<hooks).map { index in SignOutHook("hook\(index)") { _ in } })
    }

    static let rows: [Row] = [
        Row(
            name: "local: revoke everything, remove", options: options(), support: .unsupported,
            actions: ["revoke access_token,refresh_token,device_secret", "remove", "end"],
            steps: [
                "revoke-access-token succeeded", "revoke-refresh-token succeeded", "revoke-device-secret succeeded",
                "local-removal succeeded",
            ]),
        Row(
            name: "local, nothing to revoke and no session to end: straight to removal",
            options: options(revoke: false), support: .unsupported, actions: ["remove", "end"],
            steps: ["local-removal succeeded"]),
        Row(
            name: "global with a valid access token: global first, then the revocations",
            options: options(global: true), support: .supported,
            actions: ["global", "revoke access_token,refresh_token,device_secret", "remove", "end"],
            steps: [
                "refresh skipped", "global-signout succeeded", "revoke-access-token succeeded",
                "revoke-refresh-token succeeded", "revoke-device-secret succeeded", "local-removal succeeded",
            ]),
        Row(
            name: "global with an expired access token refreshes first, then revokes what the refresh left",
            options: options(global: true), support: .supported, tokens: expiredAccess,
            actions: ["refresh", "global", "revoke access_token,refresh_token,device_secret", "remove", "end"],
            steps: [
                "refresh succeeded", "global-signout succeeded", "revoke-access-token succeeded",
                "revoke-refresh-token succeeded", "revoke-device-secret succeeded", "local-removal succeeded",
            ]),
        Row(
            name: "global whose refresh fails: no access token to sign out with, the global step is queued",
            options: options(global: true), support: .supported, tokens: expiredAccess,
            script: Script(refresh: .failure(offline), failing: [.accessToken, .refreshToken]),
            actions: ["refresh", "revoke access_token,refresh_token", "queue", "remove", "end"],
            steps: [
                "refresh failed", "global-signout queued", "revoke-access-token queued", "revoke-refresh-token queued",
                "local-removal succeeded",
            ],
            queued: ["global-signout", "revoke-access-token after global", "revoke-refresh-token after global"]),
        Row(
            name: "global without a global mechanism falls back to revoking the grant and ending the session",
            options: options(global: true, revoke: false), support: .unsupported,
            actions: ["revoke access_token,refresh_token,device_secret +end-session", "remove", "end"],
            steps: [
                "global-signout skipped", "revoke-access-token succeeded", "revoke-refresh-token succeeded",
                "revoke-device-secret succeeded", "end-session succeeded", "local-removal succeeded",
            ]),
        Row(
            name: "global offline, support unknown: the global step and the fallback are all queued",
            options: options(global: true), support: .unknown(offline),
            script: Script(failing: [.accessToken, .refreshToken, .deviceSecret], endSession: .failure(offline)),
            actions: ["revoke access_token,refresh_token,device_secret +end-session", "queue", "remove", "end"],
            steps: [
                "global-signout queued", "revoke-access-token queued", "revoke-refresh-token queued",
                "revoke-device-secret queued", "end-session queued", "local-removal succeeded",
            ],
            queued: [
                "global-signout", "revoke-access-token after global", "revoke-refresh-token after global",
                "revoke-device-secret after global", "end-session after global",
            ]),
        Row(
            name: "global that fails under server-first keeps the account and its tokens, to try again with",
            options: options(global: true, policy: .serverFirst), support: .supported,
            script: Script(global: .failure(offline)),
            actions: ["global", "keep ", "end"],
            steps: [
                "refresh skipped", "global-signout failed", "revoke-access-token skipped",
                "revoke-refresh-token skipped", "revoke-device-secret skipped", "local-removal skipped",
            ],
            stillSignedIn: .serverStepFailed),
        Row(
            name:
                "global that fails for now under always-local: the revocations are held back and queued after it, which needs the tokens alive",
            options: options(global: true), support: .supported, script: Script(global: .failure(offline)),
            actions: ["global", "queue", "remove", "end"],
            steps: [
                "refresh skipped", "global-signout queued", "revoke-access-token queued", "revoke-refresh-token queued",
                "revoke-device-secret queued", "local-removal succeeded",
            ],
            queued: [
                "global-signout", "revoke-access-token after global", "revoke-refresh-token after global",
                "revoke-device-secret after global",
            ]),
        Row(
            name: "global refused for good: nothing to wait for, the revocations go now",
            options: options(global: true), support: .supported, script: Script(global: .failure(refused)),
            actions: ["global", "revoke access_token,refresh_token,device_secret", "queue", "remove", "end"],
            steps: [
                "refresh skipped", "global-signout queued", "revoke-access-token succeeded",
                "revoke-refresh-token succeeded", "revoke-device-secret succeeded", "local-removal succeeded",
            ],
            queued: ["global-signout"]),
        Row(
            name: "a failed revocation under always-local is queued alone, waiting for nothing",
            options: options(), support: .unsupported, script: Script(failing: [.refreshToken]),
            actions: ["revoke access_token,refresh_token,device_secret", "queue", "remove", "end"],
            steps: [
                "revoke-access-token succeeded", "revoke-refresh-token queued", "revoke-device-secret succeeded",
                "local-removal succeeded",
            ],
            queued: ["revoke-refresh-token"]),
        Row(
            name: "a step that can be neither sent nor queued keeps the account",
            options: options(), support: .unsupported, script: Script(failing: [.refreshToken], queueing: false),
            actions: ["revoke access_token,refresh_token,device_secret", "queue", "end"],
            steps: [
                "revoke-access-token succeeded", "revoke-refresh-token failed", "revoke-device-secret succeeded",
                "local-removal skipped",
            ],
            queued: ["revoke-refresh-token"], stillSignedIn: .revocationNotQueued),
        Row(
            name: "no provider registered: every server step fails and is queued",
            options: options(global: true), support: nil,
            actions: ["queue", "remove", "end"],
            steps: [
                "global-signout queued", "revoke-access-token queued", "revoke-refresh-token queued",
                "revoke-device-secret queued", "end-session queued", "local-removal succeeded",
            ],
            queued: [
                "global-signout", "revoke-access-token after global", "revoke-refresh-token after global",
                "revoke-device-secret after global", "end-session after global",
            ]),
        Row(
            name:
                "hooks run in order once the account has left the device, the lease released; a failed hook is reported, not queued",
            options: options(hooks: 2), support: .unsupported, script: Script(hookError: true),
            actions: ["revoke access_token,refresh_token,device_secret", "remove", "end", "hook 0", "hook 1"],
            steps: [
                "revoke-access-token succeeded", "revoke-refresh-token succeeded", "revoke-device-secret succeeded",
                "local-removal succeeded", "hook:hook0 failed", "hook:hook1 failed",
            ]),
        Row(
            name: "hooks do not run while the account is still signed in here",
            options: options(global: true, policy: .serverFirst, hooks: 1), support: .supported,
            script: Script(global: .failure(offline)), actions: ["global", "keep ", "end"],
            steps: [
                "refresh skipped", "global-signout failed", "revoke-access-token skipped",
                "revoke-refresh-token skipped", "revoke-device-secret skipped", "local-removal skipped",
                "hook:hook0 skipped",
            ],
            stillSignedIn: .serverStepFailed),
        Row(
            name: "an end-session request that needs a browser is skipped with its URL",
            options: options(endSession: true, revoke: false), support: .unsupported,
            script: Script(endSession: .success(URL(string: "https://op.example/logout"))),
            actions: ["revoke  +end-session", "remove", "end"],
            steps: ["end-session skipped", "local-removal succeeded"]),
        Row(
            name: "a credential removed meanwhile is reported as already removed",
            options: options(revoke: false), support: .unsupported, script: Script(removal: .success(false)),
            actions: ["remove", "end"], steps: ["local-removal skipped"]),
        Row(
            name: "local removal that fails leaves the user signed in",
            options: options(revoke: false), support: .unsupported,
            script: Script(removal: .failure(StorageError(.databaseFailure, reason: "disk"))),
            actions: ["remove", "end"], steps: ["local-removal failed"], stillSignedIn: .localRemovalFailed),
    ]

    /// Queueing with a fixed date, no jitter and identifiers 1, 2, 3…
    static func queueing() -> SignOutPlan.Queueing {
        let next = Counter()
        return SignOutPlan.Queueing(date: start, jitter: 1) {
            UUID(uuidString: String(format: "00000000-0000-0000-0000-%012d", next.next())) ?? UUID()
        }
    }

    static func plan(_ options: SignOutOptions, _ support: SignOutPlan.GlobalSupport?, _ token: Token) -> SignOutPlan {
        SignOutPlan(
            for: StoredCredential(
                id: CredentialID(rawValue: "alice-id"), token: token,
                metadata: CredentialMetadata(
                    preferredUsername: "alice", issuer: token.provider.issuer, clientID: token.provider.clientID),
                createdAt: start, updatedAt: start),
            options: options, globalSupport: support, queueing: queueing())
    }

    @Test("the plan decides each step and the result", arguments: rows)
    func plan(_ row: Row) throws {
        var plan = Self.plan(row.options, row.support, row.tokens)
        var actions: [String] = []
        var queued: [String] = []
        var action = try plan.start()
        var outcome: AccountSignOut?
        while outcome == nil, actions.count < 20 {
            switch action {
            case .refresh:
                actions.append("refresh")
                action = try plan.refreshed(row.script.refresh.map { Self.allTokens })
            case .globalSignOut:
                actions.append("global")
                action = try plan.signedOutGlobally(row.script.global)
            case .revokeAndEndSession(let kinds, let endSession):
                actions.append(
                    "revoke \(kinds.map(\.rawValue).joined(separator: ","))\(endSession ? " +end-session" : "")")
                var outcomes: [TokenKind: RevocationOutcome] = [:]
                for kind in kinds {
                    outcomes[kind] = row.script.failing.contains(kind) ? .failed(Self.offline) : .revoked
                }
                action = try plan.revoked(outcomes, endSession: endSession ? row.script.endSession : nil)
            case .runHook(let index):
                actions.append("hook \(index)")
                action = try plan.ranHook(index, error: row.script.hookError ? Self.refused : nil)
            case .queue(let entries):
                actions.append("queue")
                queued = entries.map { "\($0.action)\($0.waitsFor != nil ? " after global" : "")" }
                action = try plan.queued(row.script.queueing ? nil : StorageError(.outboxFull, reason: "full"))
            case .keep(let revoked):
                actions.append("keep \(revoked.map(\.rawValue).sorted().joined(separator: ","))")
                action = try plan.kept(nil)
            case .remove:
                actions.append("remove")
                action = try plan.removed(row.script.removal)
            case .endTransaction:
                actions.append("end")
                action = try plan.transactionEnded()
            case .finish(let finished):
                outcome = finished
            }
        }
        #expect(actions == row.actions)
        #expect(outcome?.steps.map { "\($0.kind) \($0.status.rawValue)" } == row.steps)
        #expect(queued == row.queued)
        #expect(outcome?.failure?.code == row.stillSignedIn)
        // Every step names the account, and a queued step is one a retry can help.
        #expect(outcome?.steps.allSatisfy { $0.account.rawValue == "alice-id" && $0.accountName == "alice" } == true)
        #expect(outcome?.steps.filter { $0.status == .queued }.allSatisfy(\.isRetryable) == true)
    }

    // MARK: Single transitions

    @Test("an event the plan did not ask for is refused, and records nothing")
    func outOfOrder() throws {
        var plan = Self.plan(Self.options(), .unsupported, Self.allTokens)
        #expect(throws: SignOutPlan.OutOfOrder.self) { try plan.refreshed(.success(Self.allTokens)) }
        #expect(throws: SignOutPlan.OutOfOrder.self) { try plan.transactionEnded() }
        guard case .revokeAndEndSession = try plan.start() else {
            Issue.record("a local sign-out starts with the revocations")
            return
        }
        #expect(throws: SignOutPlan.OutOfOrder.self) { try plan.start() }
        #expect(throws: SignOutPlan.OutOfOrder.self) { try plan.signedOutGlobally(.success(())) }
        #expect(throws: SignOutPlan.OutOfOrder.self) { try plan.removed(.success(true)) }
        #expect(throws: SignOutPlan.OutOfOrder.self) { try plan.queued(nil) }
        // An end-session outcome the plan did not ask for.
        #expect(throws: SignOutPlan.OutOfOrder.self) { try plan.revoked([:], endSession: .success(nil)) }
        #expect(plan.steps.isEmpty, "a refused event recorded a step")
        guard
            case .remove = try plan.revoked(
                [.accessToken: .revoked, .refreshToken: .revoked, .deviceSecret: .revoked], endSession: nil)
        else {
            Issue.record("the revocations went through: remove")
            return
        }
        #expect(throws: SignOutPlan.OutOfOrder.self) { try plan.ranHook(0, error: nil) }
        guard case .endTransaction = try plan.removed(.success(true)) else {
            Issue.record("removed: leave the transaction")
            return
        }
        guard case .finish = try plan.transactionEnded() else {
            Issue.record("no hooks: finished")
            return
        }
        #expect(throws: SignOutPlan.OutOfOrder.self) { try plan.removed(.success(true)) }
        #expect(plan.steps.count == 4)
    }

    @Test("the plan decides the entries: one per token, the provider's expiries, the shared global id")
    func entries() throws {
        var token = Self.allTokens
        token.resourceTokens["https://api.example"] = ResourceToken(
            resource: "https://api.example", requestedScopes: nil, accessToken: "SECRET-API-AT", tokenType: "Bearer",
            scopes: nil, issuedAt: Self.start, expiresAt: Self.start.addingTimeInterval(600))
        var plan = Self.plan(Self.options(global: true), .supported, token)
        guard case .globalSignOut = try plan.start() else {
            Issue.record("a valid access token: the global sign-out first")
            return
        }
        guard case .queue(let entries) = try plan.signedOutGlobally(.failure(Self.offline)) else {
            Issue.record("offline under always-local: queue")
            return
        }
        let global = try #require(entries.first { $0.action == .globalSignOut })
        #expect(global.payload.grant == OutboxGrant(token))
        #expect(global.waitsFor == nil)
        let revocations = entries.filter { $0.action != .globalSignOut }
        #expect(revocations.allSatisfy { $0.waitsFor == global.id && $0.failureCause == .heldBack })
        #expect(Set(entries.map(\.id)).count == entries.count, "identifiers are the plan's, one each")
        let accessTokens = revocations.filter { $0.action == .revoke(.accessToken) }
        #expect(Set(accessTokens.compactMap(\.payload.token)) == ["SECRET-AT", "SECRET-API-AT"])
        #expect(
            accessTokens.first { $0.payload.token == "SECRET-API-AT" }?.tokenExpiresAt
                == Self.start.addingTimeInterval(600))
        #expect(
            accessTokens.first { $0.payload.token == "SECRET-AT" }?.tokenExpiresAt
                == Self.start.addingTimeInterval(3_600))
        #expect(entries.allSatisfy { $0.createdAt == Self.start && $0.attempts == 1 && $0.account == "alice" })
        // Backoff from the plan's date, without jitter: 30 s.
        #expect(entries.allSatisfy { $0.nextAttemptAt == Self.start.addingTimeInterval(30) })
        guard case .remove = try plan.queued(nil) else {
            Issue.record("queued: remove")
            return
        }
        #expect(plan.steps.filter { $0.status == .queued }.count == 4)
    }
}

/// 1, 2, 3…
private final class Counter: Sendable {
    private let value = NIOLockedValueBox(0)
    func next() -> Int {
        value.withLockedValue {
            $0 += 1
            return $0
        }
    }
}

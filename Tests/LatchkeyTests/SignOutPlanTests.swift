import Foundation
import Latchkey
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
        var tokens = SignOutPlanTests.allTokens
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

    static let allTokens = SignOutPlan.Tokens(
        hasAccessToken: true, accessTokenValid: true, hasRefreshToken: true,
        revocable: [.accessToken, .refreshToken, .deviceSecret])
    static let expiredAccess = SignOutPlan.Tokens(
        hasAccessToken: true, accessTokenValid: false, hasRefreshToken: true, revocable: [.accessToken, .refreshToken])
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
            actions: ["revoke access_token,refresh_token,device_secret", "remove"],
            steps: [
                "revoke-access-token succeeded", "revoke-refresh-token succeeded", "revoke-device-secret succeeded",
                "local-removal succeeded",
            ]),
        Row(
            name: "local, nothing to revoke and no session to end: straight to removal",
            options: options(revoke: false), support: .unsupported, actions: ["remove"],
            steps: ["local-removal succeeded"]),
        Row(
            name: "global with a valid access token: global first, then the revocations",
            options: options(global: true), support: .supported,
            actions: ["global", "revoke access_token,refresh_token,device_secret", "remove"],
            steps: [
                "refresh skipped", "global-signout succeeded", "revoke-access-token succeeded",
                "revoke-refresh-token succeeded", "revoke-device-secret succeeded", "local-removal succeeded",
            ]),
        Row(
            name: "global with an expired access token refreshes first, then revokes what the refresh left",
            options: options(global: true), support: .supported, tokens: expiredAccess,
            actions: ["refresh", "global", "revoke access_token,refresh_token,device_secret", "remove"],
            steps: [
                "refresh succeeded", "global-signout succeeded", "revoke-access-token succeeded",
                "revoke-refresh-token succeeded", "revoke-device-secret succeeded", "local-removal succeeded",
            ]),
        Row(
            name: "global whose refresh fails: no access token to sign out with, the global step is queued",
            options: options(global: true), support: .supported, tokens: expiredAccess,
            script: Script(refresh: .failure(offline), failing: [.accessToken, .refreshToken]),
            actions: ["refresh", "revoke access_token,refresh_token", "queue", "remove"],
            steps: [
                "refresh failed", "global-signout queued", "revoke-access-token queued", "revoke-refresh-token queued",
                "local-removal succeeded",
            ],
            queued: ["global-signout", "revoke-access-token after global", "revoke-refresh-token after global"]),
        Row(
            name: "global without a global mechanism falls back to revoking the grant and ending the session",
            options: options(global: true, revoke: false), support: .unsupported,
            actions: ["revoke access_token,refresh_token,device_secret +end-session", "remove"],
            steps: [
                "global-signout skipped", "revoke-access-token succeeded", "revoke-refresh-token succeeded",
                "revoke-device-secret succeeded", "end-session succeeded", "local-removal succeeded",
            ]),
        Row(
            name: "global offline, support unknown: the global step and the fallback are all queued",
            options: options(global: true), support: .unknown(offline),
            script: Script(failing: [.accessToken, .refreshToken, .deviceSecret], endSession: .failure(offline)),
            actions: ["revoke access_token,refresh_token,device_secret +end-session", "queue", "remove"],
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
            actions: ["global", "keep "],
            steps: [
                "refresh skipped", "global-signout failed", "revoke-access-token skipped",
                "revoke-refresh-token skipped", "revoke-device-secret skipped", "local-removal skipped",
            ],
            stillSignedIn: .serverStepFailed),
        Row(
            name:
                "global that fails for now under always-local: the revocations are held back and queued after it, which needs the tokens alive",
            options: options(global: true), support: .supported, script: Script(global: .failure(offline)),
            actions: ["global", "queue", "remove"],
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
            actions: ["global", "revoke access_token,refresh_token,device_secret", "queue", "remove"],
            steps: [
                "refresh skipped", "global-signout queued", "revoke-access-token succeeded",
                "revoke-refresh-token succeeded", "revoke-device-secret succeeded", "local-removal succeeded",
            ],
            queued: ["global-signout"]),
        Row(
            name: "a failed revocation under always-local is queued alone, waiting for nothing",
            options: options(), support: .unsupported, script: Script(failing: [.refreshToken]),
            actions: ["revoke access_token,refresh_token,device_secret", "queue", "remove"],
            steps: [
                "revoke-access-token succeeded", "revoke-refresh-token queued", "revoke-device-secret succeeded",
                "local-removal succeeded",
            ],
            queued: ["revoke-refresh-token"]),
        Row(
            name: "a step that can be neither sent nor queued keeps the account",
            options: options(), support: .unsupported, script: Script(failing: [.refreshToken], queueing: false),
            actions: ["revoke access_token,refresh_token,device_secret", "queue"],
            steps: [
                "revoke-access-token succeeded", "revoke-refresh-token failed", "revoke-device-secret succeeded",
                "local-removal skipped",
            ],
            queued: ["revoke-refresh-token"], stillSignedIn: .revocationNotQueued),
        Row(
            name: "no provider registered: every server step fails and is queued",
            options: options(global: true), support: nil,
            actions: ["queue", "remove"],
            steps: [
                "global-signout queued", "revoke-access-token queued", "revoke-refresh-token queued",
                "revoke-device-secret queued", "end-session queued", "local-removal succeeded",
            ],
            queued: [
                "global-signout", "revoke-access-token after global", "revoke-refresh-token after global",
                "revoke-device-secret after global", "end-session after global",
            ]),
        Row(
            name: "hooks run in order after the server steps; a failed hook is reported, not queued",
            options: options(hooks: 2), support: .unsupported, script: Script(hookError: true),
            actions: ["revoke access_token,refresh_token,device_secret", "hook 0", "hook 1", "remove"],
            steps: [
                "revoke-access-token succeeded", "revoke-refresh-token succeeded", "revoke-device-secret succeeded",
                "hook:hook0 failed", "hook:hook1 failed", "local-removal succeeded",
            ]),
        Row(
            name: "an end-session request that needs a browser is skipped with its URL",
            options: options(endSession: true, revoke: false), support: .unsupported,
            script: Script(endSession: .success(URL(string: "https://op.example/logout"))),
            actions: ["revoke  +end-session", "remove"],
            steps: ["end-session skipped", "local-removal succeeded"]),
        Row(
            name: "a credential removed meanwhile is reported as already removed",
            options: options(revoke: false), support: .unsupported, script: Script(removal: .success(false)),
            actions: ["remove"], steps: ["local-removal skipped"]),
        Row(
            name: "local removal that fails leaves the user signed in",
            options: options(revoke: false), support: .unsupported,
            script: Script(removal: .failure(StorageError(.databaseFailure, reason: "disk"))),
            actions: ["remove"], steps: ["local-removal failed"], stillSignedIn: .localRemovalFailed),
    ]

    @Test("the plan decides each step and the result", arguments: rows)
    func plan(_ row: Row) {
        var plan = SignOutPlan(
            account: CredentialID(rawValue: "alice-id"), accountName: "alice", options: row.options,
            globalSupport: row.support, tokens: row.tokens)
        var actions: [String] = []
        var queued: [String] = []
        var action = plan.start()
        var outcome: AccountSignOut?
        while outcome == nil, actions.count < 20 {
            switch action {
            case .refresh:
                actions.append("refresh")
                action = plan.refreshed(row.script.refresh.map { Self.allTokens })
            case .globalSignOut:
                actions.append("global")
                action = plan.signedOutGlobally(row.script.global)
            case .revokeAndEndSession(let kinds, let endSession):
                actions.append(
                    "revoke \(kinds.map(\.rawValue).joined(separator: ","))\(endSession ? " +end-session" : "")")
                var outcomes: [TokenKind: RevocationOutcome] = [:]
                for kind in kinds {
                    outcomes[kind] = row.script.failing.contains(kind) ? .failed(Self.offline) : .revoked
                }
                action = plan.revoked(outcomes, endSession: endSession ? row.script.endSession : nil)
            case .runHook(let index):
                actions.append("hook \(index)")
                action = plan.ranHook(index, error: row.script.hookError ? Self.refused : nil)
            case .queue(let steps):
                actions.append("queue")
                queued = steps.map { "\($0.action)\($0.waitsForGlobalSignOut ? " after global" : "")" }
                let error = StorageError(.outboxFull, reason: "full")
                action = plan.queued(steps.map { ($0, row.script.queueing ? nil : error) })
            case .keep(let revoked):
                actions.append("keep \(revoked.map(\.rawValue).sorted().joined(separator: ","))")
                action = plan.kept(nil)
            case .remove:
                actions.append("remove")
                action = plan.removed(row.script.removal)
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
}

import ArgumentParser
import Foundation
import Latchkey

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `latchkey signout`.
struct SignOut: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "signout",
        abstract: "Sign out on this device or on all devices, revoking the tokens.",
        discussion:
            "Exit status 0: complete; 3: signed out here, but a server step failed or was queued; 1: still signed in.")

    @OptionGroup var common: GlobalOptions
    @Argument(help: "An account id, username or email; the default account if left out.") var account: String?
    @Flag(name: .customLong("all-accounts"), help: "Sign every account out.") var allAccounts = false
    @Flag(help: "Sign out on every device (the provider's global sign-out).") var global = false
    @Flag(name: .customLong("end-session"), help: "End the provider's session too.") var endSession = false
    @Option(help: "always-local (default) or server-first.") var policy: String = "always-local"
    @Flag(help: "Do not ask.") var yes = false

    func validate() throws {
        guard SignOutPolicy(rawValue: policy) != nil else {
            throw ValidationError("--policy must be always-local or server-first.")
        }
        if allAccounts, account != nil { throw ValidationError("Name an account or use --all-accounts, not both.") }
    }

    struct Report: Encodable {
        struct Step: Encodable {
            var account: String
            var step: String
            var status: String
            var error: String?
            var retryable: Bool

            func encode(to encoder: any Encoder) throws {
                enum Keys: String, CodingKey { case account, step, status, error, retryable }
                var container = encoder.container(keyedBy: Keys.self)
                try container.encode(account, forKey: .account)
                try container.encode(step, forKey: .step)
                try container.encode(status, forKey: .status)
                try container.encode(error, forKey: .error)  // null when there is none
                try container.encode(retryable, forKey: .retryable)
            }
        }

        var outcome: String
        var signedOutLocally: Bool
        var steps: [Step]
        var browserURLs: [String]?
    }

    func run() async throws {
        var isGlobal = global
        if !global && !yes {
            guard isatty(STDIN_FILENO) == 1 else {
                throw CLIError.input("signout needs --yes (or --global) when not run on a terminal.")
            }
            FileHandle.standardError.write(
                Data("1) Sign out on this device\n2) Sign out on ALL devices\n3) Cancel\nChoose [1-3]: ".utf8))
            switch readLine()?.trimmingCharacters(in: .whitespaces) {
            case "1": isGlobal = false
            case "2": isGlobal = true
            default:
                Output.report(common, "Cancelled; nothing changed.")
                return
            }
        }
        let session = try await common.location.openStore()
        let scope: SignOutScope
        if allAccounts {
            scope = .all
        } else if let account {
            scope = .account(try await session.account(account).id)
        } else {
            scope = .account(try await session.account(nil).id)
        }
        await session.retryDueOutbox()
        let options = SignOutOptions(
            global: isGlobal, endProviderSession: endSession, revokeTokens: true,
            policy: SignOutPolicy(rawValue: policy) ?? .alwaysLocal)
        let result = await session.store.signOut(scope, options: options)
        show(result)
        switch result {
        case .complete: return
        case .partial: throw ExitCode(ExitStatus.partial.rawValue)
        case .failed: throw ExitCode(ExitStatus.failed.rawValue)
        }
    }

    private func show(_ result: SignOutResult) {
        let outcome: String
        switch result {
        case .complete: outcome = "complete"
        case .partial: outcome = "partial"
        case .failed: outcome = "failed"
        }
        if common.json {
            Output.json(
                Report(
                    outcome: outcome, signedOutLocally: result.signedOutLocally,
                    steps: result.steps.map {
                        Report.Step(
                            account: $0.accountName ?? $0.account.rawValue, step: $0.kind.description,
                            status: $0.status.rawValue,
                            error: $0.status == .succeeded || $0.status == .skipped ? nil : $0.reason,
                            retryable: $0.isRetryable)
                    },
                    browserURLs: result.browserURLs.isEmpty ? nil : result.browserURLs.map(\.absoluteString)))
            return
        }
        for step in result.steps {
            let mark =
                switch step.status {
                case .succeeded: Output.mark(true)
                case .failed: Output.mark(false)
                case .skipped: "-"
                case .queued: "…"
                }
            var line = "\(mark) \(step.accountName ?? step.account.rawValue): \(step.kind) \(step.status.rawValue)"
            if let reason = step.reason { line += " (\(reason))" }
            Output.line(line)
        }
        for url in result.browserURLs {
            Output.line("Open this URL to end the provider session: \(url.absoluteString)")
        }
        switch result {
        case .complete: Output.line("Signed out.")
        case .partial:
            Output.line(
                "Signed out on this device; some server steps failed. Queued revocations are retried by `latchkey outbox retry` and before other commands."
            )
        case .failed(let error, _): Output.line("Still signed in: \(error)")
        }
    }
}

/// `latchkey outbox [list | retry]`.
struct Outbox: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show or retry the revocations that failed during sign-out.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "list (default) or retry.") var action: String = "list"

    func validate() throws {
        guard ["list", "retry"].contains(action) else { throw ValidationError("outbox takes list or retry.") }
    }

    func run() async throws {
        let session = try await global.location.openStore()
        if action == "retry" {
            let report = await session.store.drainOutbox(DrainOptions(includeNotDue: true))
            Output.report(
                global, "Outbox: \(report).",
                [
                    "revoked": .number(Double(report.revoked)), "failed": .number(Double(report.failed)),
                    "dropped": .number(Double(report.dropped)), "remaining": .number(Double(report.remaining)),
                ])
            if report.failed > 0 { throw ExitCode(ExitStatus.failed.rawValue) }
            return
        }
        let entries: [OutboxEntry]
        do {
            entries = try await session.store.outboxEntries()
        } catch {
            throw CLIError.failed("The outbox cannot be read: \(error)")
        }
        if global.json {
            struct Row: Encodable {
                var id: String
                var account: String?
                var kind: String
                var issuer: String
                var attempts: Int
                var nextAttemptAt: Date
                var lastError: String?
            }
            Output.json(
                entries.map {
                    Row(
                        id: $0.id.uuidString, account: $0.account, kind: $0.kind.rawValue, issuer: $0.provider.issuer,
                        attempts: $0.attempts, nextAttemptAt: $0.nextAttemptAt, lastError: $0.lastError)
                })
            return
        }
        if entries.isEmpty { Output.line("The outbox is empty: every revocation went through.") }
        for entry in entries {
            Output.line(
                "\(entry.kind) of \(entry.account ?? "?") at \(entry.provider.issuer): \(entry.attempts) attempt(s), next at \(entry.nextAttemptAt.formatted(.iso8601))"
            )
        }
    }
}

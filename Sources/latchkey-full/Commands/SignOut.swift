import ArgumentParser
import Foundation
import Latchkey
import LatchkeyCommandLine

/// `latchkey signout`.
struct SignOut: AsyncParsableCommand, AccountCommand {
    static let configuration = CommandConfiguration(
        commandName: "signout",
        abstract: "Sign out on this device or on all devices, revoking the tokens.",
        discussion:
            "Exit status 0: complete; 3: signed out here, but a server step failed or was queued; 1: still signed in.")

    @OptionGroup var common: GlobalOptions
    @OptionGroup var accountArgument: AccountArgument
    @Flag(help: "Sign every account out.") var allAccounts = false
    @Flag(help: "Sign out on every device (the provider's global sign-out).") var global = false
    @Flag(help: "End the provider's session too.") var endSession = false
    @Option(help: "What a failed server step means.") var policy: SignOutPolicy = .alwaysLocal
    @Flag(help: "Do not ask.") var yes = false
    @Flag(
        name: .customLong("show-urls"),
        help: "With --json, show end-session URLs whole; by default their id_token_hint is redacted.")
    var showURLs = false

    func validate() throws {
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
            writeAll(STDERR_FILENO, "1) Sign out on this device\n2) Sign out on ALL devices\n3) Cancel\nChoose [1-3]: ")
            switch readLine()?.trimmingCharacters(in: .whitespaces) {
            case "1": isGlobal = false
            case "2": isGlobal = true
            default:
                Output.report(common, "Cancelled; nothing changed.")
                return
            }
        }
        let session = try await common.location.openStore()
        // The account is found by its listing: nothing is opened before the sign-out, which
        // opens each credential once in its transaction.
        let scope: SignOutScope = allAccounts ? .all : .account(try await session.accountID(account))
        await session.retryDueOutbox()
        let options = SignOutOptions(
            global: isGlobal, endProviderSession: endSession, revokeTokens: true,
            policy: policy)
        let result = await session.store.signOut(scope, options: options)
        show(result)
        switch result {
        case .complete: return
        case .partial:
            throw CLIError(
                status: .partial,
                description:
                    "Signed out on this device; a server step did not go through (see above): queued ones are sent by `latchkey outbox retry`."
            )
        case .failed:
            throw CLIError.failed("The sign-out did not complete (see above); the account stays signed in.")
        }
    }

    /// `url` with the value of `id_token_hint` replaced: it is the user's ID token.
    static func redacted(_ url: URL) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return "<redacted>" }
        components.queryItems = components.queryItems?.map {
            $0.name == "id_token_hint" ? URLQueryItem(name: $0.name, value: "REDACTED") : $0
        }
        return components.url?.absoluteString ?? "<redacted>"
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
                            error: $0.status == .succeeded || $0.status == .skipped ? nil : $0.reason?.text,
                            retryable: $0.isRetryable)
                    },
                    browserURLs: result.browserURLs.isEmpty
                        ? nil : result.browserURLs.map { showURLs ? $0.absoluteString : Self.redacted($0) }))
            return
        }
        for step in result.steps {
            var line = "\(step.accountName ?? step.account.rawValue): \(step.kind) \(step.status.rawValue)"
            if let reason = step.reason { line += " (\(reason))" }
            switch step.status {
            case .succeeded: Output.line(mark: true, line)
            case .failed: Output.line(mark: false, line)
            case .skipped: Output.line("- " + line)
            case .queued: Output.line("… " + line)
            }
        }
        // The URL carries the ID token as id_token_hint: to standard error, never into a pipe of
        // results that may be logged.
        for url in result.browserURLs {
            writeAll(STDERR_FILENO, "Open this URL to end the provider session: \(Output.safe(url.absoluteString))\n")
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

/// `latchkey outbox [list | retry | drop ID]`.
struct Outbox: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show, retry or drop the revocations that failed during sign-out.",
        subcommands: [List.self, Retry.self, Drop.self], defaultSubcommand: List.self)

    /// `latchkey outbox list`: every entry, permanent failures and damaged rows included.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the queued revocations.")
        @OptionGroup var global: GlobalOptions

        struct Row: Encodable {
            var id: String
            var account: String?
            var kind: String
            var issuer: String
            var attempts: Int
            var nextAttemptAt: Date?
            var lastError: String?
            var failedPermanently: Bool
            var damaged: Bool
        }

        func run() async throws {
            let session = try await global.location.openStore()
            let entries: [OutboxEntry]
            let damaged: [DamagedRecord]
            do {
                entries = try await session.store.outboxEntries()
                damaged = try await session.store.damagedRecords().filter { $0.kind == .outboxEntry }
            } catch {
                throw CLIError.failed("The outbox cannot be read: \(error)")
            }
            if global.json {
                Output.json(
                    entries.map {
                        Row(
                            id: $0.id.uuidString, account: $0.account, kind: $0.action.rawValue,
                            issuer: $0.provider.issuer, attempts: $0.attempts,
                            nextAttemptAt: $0.failedPermanently ? nil : $0.nextAttemptAt, lastError: $0.lastError,
                            failedPermanently: $0.failedPermanently, damaged: false)
                    }
                        + damaged.map {
                            Row(
                                id: $0.id, kind: "?", issuer: "?", attempts: 0, lastError: $0.reason,
                                failedPermanently: false, damaged: true)
                        })
            } else {
                if entries.isEmpty && damaged.isEmpty {
                    Output.line("The outbox is empty: every revocation went through.")
                }
                for entry in entries {
                    let state =
                        entry.failedPermanently
                        ? "failed for good: \(Output.safe(entry.lastError ?? "no reason given")). Once that is fixed, `latchkey outbox retry --include-failed` sends it again (adding its provider again does too); or give it up with `latchkey outbox drop \(entry.id)`"
                        : "next at \(entry.nextAttemptAt.formatted(.iso8601))\(entry.lastError.map { " (last: \(Output.safe($0)))" } ?? "")"
                    Output.line(
                        "\(entry.id) \(entry.action) of \(entry.account ?? "?") at \(entry.provider.issuer): \(entry.attempts) attempt(s), \(state)"
                    )
                }
                for record in damaged { Output.line("! damaged entry \(record.id): \(Output.safe(record.reason))") }
            }
            if !damaged.isEmpty {
                throw CLIError.failed(
                    "\(damaged.count) damaged outbox entr\(damaged.count == 1 ? "y" : "ies") left as they are; drop one with `latchkey outbox drop ID`."
                )
            }
        }
    }

    /// `latchkey outbox retry [--include-failed]`: every entry that may still go through, due or
    /// not; with `--include-failed`, those that failed for good too.
    struct Retry: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Retry the queued revocations now.")
        @OptionGroup var global: GlobalOptions
        @Flag(
            help: "Also retry the entries that failed for good (their cause is gone: a provider added back, say).")
        var includeFailed = false

        func run() async throws {
            let session = try await global.location.openStore()
            if includeFailed {
                _ = try await session.reading("The outbox") { () async throws(StorageError) in
                    try await session.store.retryFailedOutboxEntries()
                }
            }
            let report = await session.store.drainOutbox(DrainOptions(includeNotDue: true))
            var fields: [String: JSONValue] = [
                "revoked": .number(Double(report.revoked)), "failed": .number(Double(report.failed)),
                "dropped": .number(Double(report.dropped)), "remaining": .number(Double(report.remaining)),
                "failedPermanently": .number(Double(report.permanent)),
            ]
            if !report.damaged.isEmpty { fields["damaged"] = .array(report.damaged.map { .string($0.id) }) }
            Output.report(global, "Outbox: \(report).", fields)
            if !report.isClean {
                throw CLIError.failed("Not every queued step went through: \(report).")
            }
        }
    }

    /// `latchkey outbox drop ID`: gives up on one entry on purpose.
    struct Drop: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove one queued revocation without sending it; its token stays valid until it expires.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The entry's id, as `latchkey outbox list` shows it.") var id: String

        func validate() throws {
            guard UUID(uuidString: id) != nil else { throw ValidationError("\(id) is not an outbox entry id.") }
        }

        func run() async throws {
            let session = try await global.location.openStore()
            guard let uuid = UUID(uuidString: id) else { throw CLIError.input("\(id) is not an outbox entry id.") }
            let dropped: Bool
            do {
                dropped = try await session.store.dropOutboxEntry(uuid)
            } catch {
                throw CLIError.failed("The outbox cannot be changed: \(error)")
            }
            guard dropped else { throw CLIError.input("No outbox entry has the id \(id).") }
            Output.report(
                global, "Dropped \(id); its token was not revoked and stays valid until it expires.",
                ["id": .string(id)])
        }
    }
}

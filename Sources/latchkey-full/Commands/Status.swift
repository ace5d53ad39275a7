import ArgumentParser
import Foundation
import Latchkey
import LatchkeyCommandLine

/// `latchkey status [--check]`: every account's state at a glance, as `gh auth status` shows it.
struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show each account's tokens, whether it must sign in again, and what the outbox holds.",
        discussion: """
            Reads the store only: no network call unless --check asks the provider (userinfo, and \
            the SSO session for Ping journey accounts). Exits 4 when an account must sign in again.
            """)
    @OptionGroup var global: GlobalOptions
    @Flag(help: "Ask the provider whether each account's tokens still work (userinfo; the session for journeys).")
    var check = false

    /// An account as `accounts` lists it, and what `status` adds, in one JSON object.
    struct Row: Encodable {
        var account: AccountRow
        var state: State

        /// What `status` adds to the account's fields.
        struct State: Encodable {
            var accessTokenValid: Bool
            var needsSignIn: Bool
            /// What --check found: `ok`, `sign-in-required`, or why it could not tell.
            var checked: String?
            var queuedRevocations: Int
            /// The resources (RFC 8707) its grant was asked for at sign-in.
            var resources: [String]?
        }

        /// The account's fields, then the state's, in one object.
        func encode(to encoder: any Encoder) throws {
            try account.encode(to: encoder)
            try state.encode(to: encoder)
        }
    }

    struct Report: Encodable {
        var accounts: [Row]
        var outbox: OutboxState
    }

    struct OutboxState: Encodable {
        var entries: Int
        var failedPermanently: Int
        var oldest: Date?
        var nextAttempt: Date?
    }

    func run() async throws {
        let session = try await global.location.openStore()
        let accounts: [AccountSummary]
        let entries: [OutboxEntry]
        do {
            accounts = try await session.store.accounts()
            entries = try await session.store.outboxEntries()
        } catch {
            throw CLIError.failed("The credential store cannot be read: \(error)")
        }
        let current = try await session.defaultAccountIDForListing()
        let now = Date()
        var rows: [Row] = []
        for account in accounts {
            let name = account.metadata.displayName
            var row = Row(
                account: AccountRow(account, in: session, default: current),
                state: Row.State(
                    accessTokenValid: account.hasAccessToken
                        && (account.accessTokenExpiresAt.map { $0 > now } ?? true),
                    needsSignIn: account.needsSignIn,
                    queuedRevocations: entries.filter { $0.account != nil && $0.account == name }.count))
            // The one thing here from the sealed tokens (a damaged record shows none of it).
            row.state.resources = try? await session.store.credential(for: account.id)?.token.resources
            if check { row.state.checked = await Self.check(account, in: session, row: &row) }
            rows.append(row)
        }
        let outbox = OutboxState(
            entries: entries.count, failedPermanently: entries.filter(\.failedPermanently).count,
            oldest: entries.map(\.createdAt).min(),
            nextAttempt: entries.filter { !$0.failedPermanently }.map(\.nextAttemptAt).min())
        if global.json {
            Output.json(Report(accounts: rows, outbox: outbox))
        } else {
            render(rows, outbox)
        }
        let stale = rows.filter(\.state.needsSignIn).count
        if stale > 0 {
            throw CLIError(
                status: .signInRequired,
                description: "\(stale) account(s) must sign in again (`latchkey login`).")
        }
    }

    /// Asks the provider about `account`: its user info with a fresh access token, and for a
    /// journey account its SSO session too.
    private static func check(_ account: AccountSummary, in session: Session, row: inout Row) async -> String {
        do {
            guard let stored = try await session.store.credential(for: account.id) else { return "gone" }
            let credential = try await session.credential(stored)
            if let ping = session.providerName(of: stored).flatMap({ session.clients[$0]?.pingJourney }),
                let sessionToken = stored.token.sessionToken
            {
                guard try await ping.validateSession(sessionToken).isValid else {
                    row.state.needsSignIn = true
                    return "sign-in-required"
                }
            }
            _ = try await credential.userInfo()
            let refreshed = try await credential.token
            row.state.accessTokenValid = true
            row.account.accessTokenExpiresAt = refreshed.expiresAt
            return "ok"
        } catch let error as ProviderError where error.requiresSignIn {
            row.state.needsSignIn = true
            return "sign-in-required"
        } catch {
            return "unknown: \(error)"
        }
    }

    private func render(_ rows: [Row], _ outbox: OutboxState) {
        if rows.isEmpty { Output.line("No accounts. Sign in with `latchkey login`.") }
        for row in rows {
            let (account, state) = (row.account, row.state)
            let name = account.username ?? account.email ?? account.id
            Output.line(
                "\(account.isDefault ? "*" : " ") \(name) (\(account.provider ?? "unknown provider"), \(account.id))")
            let expiry = account.accessTokenExpiresAt.map { $0.formatted(.iso8601) }
            if state.accessTokenValid {
                Output.line("    access token: valid\(expiry.map { " until \($0)" } ?? "")")
            } else {
                Output.line("    access token: \(expiry.map { "expired at \($0)" } ?? "none")")
            }
            Output.line("    refresh token: \(account.hasRefreshToken ? "held" : "none")")
            if let resources = state.resources { Output.line("    resources: \(resources.joined(separator: " "))") }
            if state.needsSignIn {
                Output.line(mark: false, "must sign in again: `latchkey login`")
            } else if let checked = state.checked {
                Output.line(mark: checked == "ok", "provider check: \(checked)")
            }
            if state.queuedRevocations > 0 { Output.line("    queued revocations: \(state.queuedRevocations)") }
        }
        if outbox.entries > 0 {
            var line = "Outbox: \(outbox.entries) revocation(s) waiting"
            if outbox.failedPermanently > 0 { line += ", \(outbox.failedPermanently) failed for good" }
            if let next = outbox.nextAttempt { line += "; next attempt \(next.formatted(.iso8601))" }
            Output.line(line + " (`latchkey outbox list`).")
        } else {
            Output.line("Outbox: empty.")
        }
    }
}

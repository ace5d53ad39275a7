import ArgumentParser
import Foundation
import Latchkey
import LatchkeyCommandLine

/// `latchkey accounts`.
struct Accounts: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the accounts signed in on this device.")
    @OptionGroup var global: GlobalOptions

    typealias Row = AccountRow

    struct DamagedRow: Encodable {
        var id: String
        var damaged = true
        var reason: String
    }

    func run() async throws {
        let session = try await global.location.openStore()
        let all: [AccountSummary]
        let damaged: [DamagedRecord]
        do {
            all = try await session.store.accounts()
            damaged = try await session.store.damagedRecords().filter { $0.kind != .outboxEntry }
        } catch {
            throw CLIError.failed("The credential store cannot be read: \(error)")
        }
        let current = try await session.defaultAccountIDForListing()
        let rows = all.map { AccountRow($0, in: session, default: current) }
        let damagedRows = damaged.map { DamagedRow(id: $0.id, reason: $0.reason) }
        if global.json {
            if damagedRows.isEmpty {
                Output.json(rows)
            } else {
                Output.json(Listing(accounts: rows, damaged: damagedRows))
            }
        } else {
            if rows.isEmpty && damagedRows.isEmpty { Output.line("No accounts. Sign in with `latchkey login`.") }
            for (row, account) in zip(rows, all) {
                var fields = [
                    "\(row.isDefault ? "*" : " ") \(row.username ?? row.email ?? "?")", row.email ?? "-",
                    row.provider ?? "?", row.id,
                ]
                if account.needsSignIn { fields.append("(must sign in again)") }
                Output.row(fields)
            }
            for row in damaged {
                Output.line(
                    "! damaged \(row.kind == .credential ? "account" : row.kind.rawValue) \(row.id): \(Output.safe(row.reason))"
                )
            }
        }
        if !damaged.isEmpty {
            throw CLIError.failed(
                "\(damaged.count) damaged record(s) left as they are; the other accounts work. Remove a damaged account with `latchkey remove ID`; choose the default again with `latchkey use`."
            )
        }
    }

    /// The JSON shape when some records are damaged.
    struct Listing: Encodable {
        var accounts: [Row]
        var damaged: [DamagedRow]
    }
}

/// `latchkey use ACCOUNT`.
struct Use: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Make an account the default.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "An account id, username or email.", completion: Completions.accounts) var account: String

    func run() async throws {
        let session = try await global.location.openStore()
        let stored = try await session.account(account)
        do {
            try await session.store.setDefault(stored.id)
        } catch {
            throw CLIError.failed("The default could not be changed: \(error)")
        }
        Output.report(
            global, "\(stored.metadata.displayName ?? stored.id.rawValue) is the default account.",
            ["id": .string(stored.id.rawValue)])
    }
}

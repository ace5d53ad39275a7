import ArgumentParser
import Foundation
import Latchkey
import LatchkeyCommandLine

/// `latchkey token [ACCOUNT]`: the raw access token, refreshed if needed (like `gh auth token`
/// and `oidc-token`), or the ID token, as a line, JSON or shell `export` lines.
struct TokenCommand: AsyncParsableCommand, AccountCommand {
    static let configuration = CommandConfiguration(
        commandName: "token", abstract: "Print the account's access token (refreshed if needed) on standard output.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var accountArgument: AccountArgument
    @Option(help: "A token for this resource alone (RFC 8707): an absolute URI, its audience.") var resource: String?
    @Option(help: "A token for these scopes only (space separated), fewer than the account's.") var scope: String?
    @Option(
        help:
            "Refresh first unless the token stays valid this long (seconds, or 90s, 5m, 1h). Without it: 60 s, or half the lifetime of a token that lives less than two minutes."
    )
    var minValidity: TokenValidity?
    @Flag(
        help:
            "Refresh now, whatever the token's expiry: one refresh for every process started at once (a token a refresh brought in the two seconds before this process started is that refresh)."
    )
    var force = false
    @Flag(help: "The ID token instead (refreshed when needed).") var idToken = false
    @Option(
        help:
            "token (the token alone), json (with its type, expiry, issuer, scope and account), export, or headers (a JSON object of HTTP headers, as MCP hosts' header helpers read)."
    )
    var format: TokenFormat?

    func validate() throws {
        if let resource, !ResourceToken.isValidResource(resource) {
            throw ValidationError("--resource must be an absolute URI without a fragment (RFC 8707): \(resource)")
        }
        if idToken, resource != nil || scope != nil {
            throw ValidationError("--id-token cannot be narrowed with --resource or --scope.")
        }
        if force, resource != nil || scope != nil {
            throw ValidationError("--force refreshes the account's own tokens; leave out --resource and --scope.")
        }
        if format == .headers, idToken {
            throw ValidationError("--format headers is for access tokens; leave out --id-token.")
        }
        if global.json, let format, format != .json {
            throw ValidationError("--json and --format \(format.rawValue) ask for two formats; give one.")
        }
    }

    func run() async throws {
        _ = TokenAsk.started
        let asked = TokenAsk(
            idToken: idToken, resource: resource, scopes: scope.map { $0.split(separator: " ").map(String.init) },
            minimumValidity: minValidity?.seconds, force: force)
        let source = global.accountSource(account)
        // A resource's token is printed only for a resource that takes the account's tokens.
        if let resource = asked.resourceURL {
            try await ResourceGate.require(resource, source: source, asked: asked.resource)
        }
        let description = try await source.token(asked)
        try show(description)
    }

    /// Prints the token in the format asked for; a bound access token cannot be fixed headers,
    /// and on a terminal comes with a note on how to send it.
    private func show(_ description: TokenDescription) throws {
        switch format ?? (global.json ? .json : .token) {
        case .token: Output.line(description.token)
        case .json: Output.json(description.fields)
        case .export: for line in description.exportLines { Output.line(line) }
        case .headers:
            guard !description.isBoundToKey else {
                throw CLIError.input(
                    "This token is bound to the account's key (DPoP): each request needs a proof of its own, which no fixed headers can carry. Use `latchkey api URL`, or `latchkey proof METHOD URL`."
                )
            }
            Output.json(description.headers)
        }
        if description.isBoundToKey, Output.errorIsTerminal {
            Output.note(
                "This token is bound to the account's key (DPoP): a request needs a proof with it. Use `latchkey api URL`, or `latchkey proof METHOD URL` for curl."
            )
        }
    }
}

/// `latchkey refresh [ACCOUNT]`.
struct Refresh: AsyncParsableCommand, AccountCommand {
    static let configuration = CommandConfiguration(abstract: "Refresh the account's tokens now.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var accountArgument: AccountArgument

    func run() async throws {
        let context = try await global.account(account)
        let stored = context.stored
        let token: Token
        do {
            token = try await context.credential.refresh()
        } catch {
            throw CLIError.provider(error, doing: "Refresh failed")
        }
        let expiry = token.expiresAt.map { $0.formatted(.iso8601) } ?? "unknown"
        var fields: [String: JSONValue] = ["id": .string(stored.id.rawValue)]
        if let expiresAt = token.expiresAt { fields["accessTokenExpiresAt"] = .string(expiresAt.formatted(.iso8601)) }
        Output.report(
            global,
            "Refreshed \(stored.metadata.displayName ?? stored.id.rawValue); the access token expires at \(expiry).",
            fields)
    }
}

/// `latchkey userinfo [ACCOUNT]`.
struct UserInfo: AsyncParsableCommand, AccountCommand {
    static let configuration = CommandConfiguration(
        commandName: "userinfo", abstract: "Show the account's claims from the provider.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var accountArgument: AccountArgument

    func run() async throws {
        let claims = try await global.accountSource(account).userInfo()
        if global.json {
            Output.json(claims)
            return
        }
        for key in claims.keys.sorted() {
            let value: String
            switch claims[key] {
            case .string(let text)?: value = text
            case .number(let number)?: value = CLINumbers.text(number)
            case .bool(let flag)?: value = String(flag)
            default: value = "…"
            }
            Output.line("\(key): \(value)")
        }
    }
}

/// `latchkey revoke [ACCOUNT] [--type …]`.
struct Revoke: AsyncParsableCommand, AccountCommand {
    static let configuration = CommandConfiguration(
        abstract: "Revoke the account's tokens at the provider (RFC 7009); revoked tokens leave this device.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var accountArgument: AccountArgument
    @Option(help: "Which tokens.") var type: RevocationScope = .all

    func run() async throws {
        let context = try await global.account(account)
        let result = await context.credential.revoke(type)
        // A Ping journey's session is not revoked: only signing out ends it.
        let keepsSession = !result.removedFromStore && context.stored.token.sessionToken != nil
        let outcomes = result.outcomes.sorted { $0.key.rawValue < $1.key.rawValue }
        if global.json {
            var fields: [String: JSONValue] = ["removedFromStore": .bool(result.removedFromStore)]
            if keepsSession { fields["sessionKept"] = .bool(true) }
            fields["outcomes"] = .object(
                Dictionary(
                    uniqueKeysWithValues: outcomes.map { kind, outcome in
                        switch outcome {
                        case .revoked: (kind.rawValue, JSONValue.string("revoked"))
                        case .notPresent: (kind.rawValue, .string("not-present"))
                        case .endsWithRefreshToken: (kind.rawValue, .string("ends-with-refresh-token"))
                        case .failed(let error): (kind.rawValue, .string("failed: \(error)"))
                        }
                    }))
            Output.report(global, result.succeeded ? "Revoked." : "Some revocations failed.", fields)
        } else {
            for (kind, outcome) in outcomes {
                switch outcome {
                case .revoked: Output.line(mark: true, "\(kind) revoked")
                case .notPresent: Output.line("- \(kind): none")
                case .endsWithRefreshToken:
                    Output.line("- \(kind): not revoked on its own; the provider revokes it with the refresh token")
                case .failed(let error): Output.line(mark: false, "\(kind): \(error)")
                }
            }
            if result.removedFromStore {
                Output.line("Nothing usable was left: the account was removed from this device.")
            }
            if keepsSession {
                Output.line(
                    "The session stays: `latchkey token` mints new tokens through it; `latchkey signout` ends it.")
            }
        }
        if !result.succeeded { throw CLIError.failed("Not every token was revoked (see above).") }
    }
}

/// `latchkey remove [ACCOUNT]`: local only.
struct Remove: AsyncParsableCommand, AccountCommand {
    static let configuration = CommandConfiguration(
        abstract: "Remove the account from this device only; its tokens stay valid on the server until they expire.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var accountArgument: AccountArgument

    func run() async throws {
        let session = try await global.location.openStore()
        // A damaged account cannot be read, but can be removed on purpose by its id.
        let damaged = try await session.reading { () async throws(StorageError) in
            try await session.store.damagedRecords()
        }
        if let account, damaged.contains(where: { $0.kind == .credential && $0.id == account }) {
            do {
                try await session.store.remove(CredentialID(rawValue: account))
            } catch {
                throw CLIError.failed("The damaged account could not be removed: \(error)")
            }
            Output.report(
                global,
                "Removed the damaged account \(account) from this device. Its tokens could not be read, so they were not revoked.",
                ["id": .string(account)])
            return
        }
        let stored = try await session.account(account)
        do {
            try await session.store.remove(stored.id)
        } catch {
            throw CLIError.failed("The account could not be removed: \(error)")
        }
        Output.report(
            global,
            "Removed \(stored.metadata.displayName ?? stored.id.rawValue) from this device. Its tokens stay valid on the server until they expire; use `latchkey signout` or `latchkey revoke` to end them.",
            ["id": .string(stored.id.rawValue), "tokensStillValidOnServer": .bool(true)])
    }
}

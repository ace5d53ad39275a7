import ArgumentParser
import Foundation
import HTTPTypes
import Latchkey
import LatchkeyCommandLine
import LatchkeyHTTP

/// `latchkey api URL`: one request with the account's token, as `gh api` sends one.
struct ApiCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "api", abstract: "Send a request with the account's token and print the answer's body.",
        discussion: """
            The token is refreshed when needed. A token bound to the account's key (DPoP) goes with a \
            proof for this request, and a server's nonce challenge is answered with the newest nonce \
            (a few times at most). An answer that says the token is not valid refreshes it, once, and \
            the request is sent again.

            Exit status: 0 the answer's status is 2xx; 1 the server answered with another status \
            (its body on standard output, and on standard error one line with the status, the \
            server's reason and what to do) or the command failed otherwise; 2 a usage error, nothing \
            sent; 4 the account must sign in again; 5 the server (or the provider, for a refresh) \
            could not be reached or did not answer in time.
            """)

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The URL (https; plain http to this machine only).") var url: String
    @Option(name: [.customShort("X"), .customLong("method")], help: "The method; GET, or POST with a body.")
    var method: String?
    @Option(name: [.customShort("H"), .customLong("header")], help: "A header, 'Name: value'; repeatable.")
    var headers: [String] = []
    @Option(name: [.customShort("d"), .customLong("data")], help: "The request body.") var data: String?
    @Option(help: "Read the request body from this file ('-' for standard input).")
    var input: String?
    @Flag(name: [.customShort("i"), .customLong("include")], help: "Print the status line and headers first.")
    var include = false
    @Option(
        help: "An account id, username or email; the default account if left out.", completion: Completions.accounts)
    var account: String?
    @Option(help: "Use a token for this resource alone (RFC 8707).") var resource: String?
    @Option(help: "Use a token for these scopes only (space separated).") var scope: String?
    @Flag(
        help:
            "With no provider configured: sign in for the server first, through the browser, as `login --resource` does (the server must say where its tokens come from, RFC 9728). When the server says the token lacks a scope (insufficient_scope): sign in for it, then send the request once more."
    )
    var login = false

    func validate() throws {
        guard let target = URL(string: url), target.host != nil, ["http", "https"].contains(target.scheme) else {
            throw ValidationError("The URL must be an http or https URL: \(url)")
        }
        guard EndpointSecurity.isAcceptable(target) else {
            throw ValidationError("The token would travel in the clear: use https (plain http to this machine only).")
        }
        guard data == nil || input == nil else { throw ValidationError("Give the body with -d or --input, not both.") }
        if let resource, !ResourceToken.isValidResource(resource) {
            throw ValidationError("--resource must be an absolute URI without a fragment (RFC 8707): \(resource)")
        }
        for header in headers where Self.field(header) == nil {
            throw ValidationError("-H takes 'Name: value': \(header)")
        }
    }

    func run() async throws {
        guard let target = URL(string: url) else { throw CLIError.input("Not a URL: \(url)") }
        let body = try readBody()
        let name = method?.uppercased() ?? (body == nil ? "GET" : "POST")
        guard let method = HTTPRequest.Method(name) else { throw CLIError.input("Not an HTTP method: \(name)") }
        var request = HTTPRequest(method: method, url: target)
        for header in headers {
            if let (field, value) = Self.field(header) {
                request.headerFields.append(HTTPField(name: field, value: value))
            }
        }
        if body != nil, request.headerFields[.contentType] == nil {
            request.headerFields[.contentType] = "application/json"
        }
        let scopes = scope.map { $0.split(separator: " ").map(String.init) }
        var source = global.accountSource(account)
        if account == nil, try await !source.hasProviders() {
            guard login else { try await Self.sayWhereToSignIn(for: target) }
            try await signIn(for: target)
            source = global.accountSource(account)
        }
        // The account's token goes only to a server that takes its provider's tokens.
        try await ResourceGate.require(target, source: source, asked: resource)
        let transport = AsyncHTTPClientTransport.shared
        var answer = try await source.send(request, body: body, resource: resource, scopes: scopes, through: transport)
        // --login: a server that needs a scope the grant lacks gets a sign-in for it (the grant
        // widened: narrower tokens come from it still), then the request once more. An agent's
        // account is widened on the agent's machine.
        if login, let granted = try await source.grantedScopes(),
            let wider = Self.steppedUpScopes(answer, granted: granted)
        {
            Output.note("The server needs \(wider.joined(separator: " ")): signing in for it.")
            try await signIn(for: target, scopes: wider)
            answer = try await global.accountSource(account).send(
                request, body: body, resource: resource, scopes: scopes, through: transport)
        }
        try finish(answer, target: target)
    }

    /// The scopes to sign in for when `answer` says the token lacks some (`insufficient_scope`
    /// with `scope`, RFC 6750 §3.1): those `granted` and those asked for; `nil` when it does not,
    /// or asks for nothing new.
    static func steppedUpScopes(_ answer: HTTPTransportResponse, granted: [String]) -> [String]? {
        guard answer.response.status == .forbidden || answer.response.status == .unauthorized,
            let challenge = ResourceChallenge(wwwAuthenticate: answer.response.headerFields[values: .wwwAuthenticate]),
            challenge.isInsufficientScope
        else { return nil }
        let missing = challenge.scopes.filter { !granted.contains($0) }
        return missing.isEmpty ? nil : ResourceSignInPlan.stepUp(granted: granted, asked: challenge.scopes)
    }

    /// Shows `answer`; a status other than 2xx fails the command, saying why.
    private func finish(_ answer: HTTPTransportResponse, target: URL) throws {
        show(answer)
        guard (200..<300).contains(answer.response.status.code) else {
            throw CLIError.failed(
                APIFailure(
                    status: answer.response.status, headers: answer.response.headerFields, body: answer.body,
                    url: target
                ).message)
        }
    }

    /// With nothing configured: what to run for a server that says where its tokens come from
    /// (RFC 9728), or that there is nothing to sign in to.
    static func sayWhereToSignIn(for target: URL) async throws -> Never {
        let found = try await discovered(target)
        let server =
            found.authorizationServer.map { TerminalText.safe($0.absoluteString) } ?? "its authorization server"
        let login = ShellCommand(ResourceGate.signIn(for: found.metadata.resource.absoluteString))
        throw CLIError.input(
            "No provider is configured. \(TerminalText.safe(target.absoluteString)) takes tokens from \(server) (RFC 9728): sign in for it with `\(login)` (or run this with --login), then run this again."
        )
    }

    /// What `target` says of itself (RFC 9728); a usage error when it says nothing.
    static func discovered(_ target: URL) async throws -> DiscoveredResource {
        do {
            return try await ResourceDiscovery(transport: AsyncHTTPClientTransport.shared, timeout: .seconds(15))
                .discover(target)
        } catch {
            throw CLIError.input(
                "No provider is configured, and \(target.absoluteString) does not say where to sign in for it (\(error.reason)): add its provider with `latchkey provider add`."
            )
        }
    }

    /// `--login`: signs in for the resource `target` names (for `scopes`, when given), through the
    /// browser, saying so on standard error (standard output is the answer's).
    private func signIn(for target: URL, scopes: [String]? = nil) async throws {
        let resource = try await Self.discovered(target).metadata.resource.absoluteString
        let signIn = AccountSignIn(global: global, browser: true, scopes: scopes, resources: [resource])
        Output.note(try await signIn.signIn().sentence)
    }

    private func show(_ answer: HTTPTransportResponse) {
        if global.json {
            var headers: [String: JSONValue] = [:]
            for field in answer.response.headerFields { headers[field.name.canonicalName] = .string(field.value) }
            let body =
                (try? JSONDecoder().decode(JSONValue.self, from: answer.body))
                ?? .string(String(decoding: answer.body, as: UTF8.self))
            Output.json(
                ["status": .number(Double(answer.response.status.code)), "headers": .object(headers), "body": body]
                    as [String: JSONValue])
            return
        }
        if include {
            Output.line("HTTP \(answer.response.status.code) \(answer.response.status.reasonPhrase)")
            for field in answer.response.headerFields { Output.line("\(field.name.rawName): \(field.value)") }
            Output.line("")
        }
        // The body as it came on a pipe; on a terminal, with control characters escaped.
        if Output.isTerminal {
            writeAll(STDOUT_FILENO, Output.safe(String(decoding: answer.body, as: UTF8.self), keepingLines: true))
        } else {
            writeAll(STDOUT_FILENO, answer.body)
        }
    }

    private func readBody() throws -> Data? {
        if let data { return Data(data.utf8) }
        guard let input else { return nil }
        if input == "-" { return FileHandle.standardInput.readDataToEndOfFile() }
        guard let contents = FileManager.default.contents(atPath: input) else {
            throw CLIError.input("The file \(input) cannot be read.")
        }
        return contents
    }

    static func field(_ header: String) -> (HTTPField.Name, String)? {
        let parts = header.split(separator: ":", maxSplits: 1)
        guard parts.count == 2, let name = HTTPField.Name(parts[0].trimmingCharacters(in: .whitespaces)) else {
            return nil
        }
        return (name, parts[1].trimmingCharacters(in: .whitespaces))
    }
}

/// `latchkey proof METHOD URL`: the headers a request with the account's DPoP-bound token
/// carries, for scripts that send it with curl.
struct ProofCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "proof", abstract: "Print the Authorization and DPoP headers of one request, for curl.",
        discussion: """
            For an account whose tokens are bound to its key (a provider added with --dpop). It prints \
            two header lines, which curl reads from a file: `latchkey proof GET URL > headers && curl \
            -H @headers URL`. A proof is good for one request, that method and URL, for about a \
            minute. A server that answers with a nonce challenge wants a new proof: run it again (the \
            nonce is kept). `latchkey api` does all of this itself.
            """)

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The request's method, e.g. GET.") var method: String
    @Argument(help: "The request's URL.") var url: String
    @Option(
        help: "An account id, username or email; the default account if left out.", completion: Completions.accounts)
    var account: String?
    @Option(help: "Use a token for this resource alone (RFC 8707).") var resource: String?

    /// What `proof` says of an account whose tokens are bearer tokens, from the store or an agent.
    static let bearerTokens = CLIError.input(
        "The account's tokens are bearer tokens, not bound to a key: send `Authorization: Bearer $(latchkey token)`. Add the provider with --dpop for bound tokens."
    )

    func run() async throws {
        guard let target = URL(string: url), EndpointSecurity.isAcceptable(target),
            let method = HTTPRequest.Method(method.uppercased())
        else {
            throw CLIError.input(
                "Give a method and an https URL (plain http to this machine only): \(Output.safe(method)) \(Output.safe(url))"
            )
        }
        let source = global.accountSource(account)
        try await ResourceGate.require(target, source: source, asked: resource)
        let given = try await source.authorization(
            for: HTTPRequest(method: method, url: target), TokenAsk(resource: resource), nonce: nil)
        // A bearer token has no proof to print, whichever source gave it.
        guard let proof = given.proof else { throw Self.bearerTokens }
        printProof(authorization: given.authorization, proof: proof)
    }

    private func printProof(authorization: String, proof: String) {
        if global.json {
            Output.json(["authorization": authorization, "dpop": proof])
        } else {
            Output.line("Authorization: \(authorization)")
            Output.line("DPoP: \(proof)")
        }
    }
}

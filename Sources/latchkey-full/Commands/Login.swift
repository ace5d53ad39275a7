import ArgumentParser
import Foundation
import Latchkey
import LatchkeyCommandLine
import LatchkeyHTTP
import NIOConcurrencyHelpers

/// `latchkey login`.
struct Login: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Sign an account in: with a password from standard input, in the browser, with a device code, or by walking a Ping journey."
    )

    @OptionGroup var global: GlobalOptions
    @Option(help: "The provider (may be left out when only one is configured).", completion: Completions.providers)
    var provider: String?
    @Option(help: "The username, with --password-stdin.") var username: String?
    @Flag(help: "Read the password from standard input.") var passwordStdin = false
    @Flag(help: "Sign in through the browser (authorization code with PKCE and a loopback redirect).") var browser =
        false
    @Flag(help: "Sign in with a device code shown here and entered on another device.") var device = false
    @Option(help: "The loopback port of the browser redirect (0: any free port).")
    var redirectPort: Int = 0
    @Option(help: "Seconds to wait for the browser or the device code.") var timeout: Int = 300
    @Flag(help: "Make this account the default.") var makeDefault = false
    @Option(help: "The scopes to ask for (space separated), instead of the provider's.") var scope: String?
    @Option(
        help:
            "A resource (RFC 8707) this sign-in's grant is for, besides the provider's own (repeatable): `token --resource` then gets its tokens at providers that issue them only for resources named at sign-in. With no provider configured, the first one's authorization server is discovered (RFC 9728), a client registered there, and a provider added."
    )
    var resource: [String] = []
    @Option(
        help:
            "With --resource and no provider configured: the client to sign in as at the discovered server, instead of registering one. An https URL is a Client ID Metadata Document the server fetches (it must say it does)."
    )
    var clientID: String?
    @Flag(
        help: "With --browser: only print the URL to open (on another machine, say); do not open a browser here.")
    var noBrowser = false

    func validate() throws {
        let methods = [passwordStdin, browser, device].filter { $0 }.count
        guard methods <= 1 else {
            throw ValidationError("Choose one of --username U --password-stdin, --browser or --device.")
        }
        if passwordStdin, username == nil { throw ValidationError("--password-stdin needs --username.") }
        if clientID != nil, resource.isEmpty || provider != nil {
            throw ValidationError("--client-id goes with --resource, for a provider found from the resource.")
        }
        if username != nil, !passwordStdin { throw ValidationError("--username goes with --password-stdin.") }
        guard timeout > 0 else { throw ValidationError("--timeout must be positive.") }
        for resource in resource where !ResourceToken.isValidResource(resource) {
            throw ValidationError("--resource must be an absolute URI without a fragment (RFC 8707): \(resource)")
        }
    }

    func run() async throws {
        let signedIn = try await signIn()
        Output.report(
            global, signedIn.sentence,
            [
                "id": .string(signedIn.id.rawValue), "account": .string(signedIn.name),
                "isDefault": .bool(signedIn.isDefault),
            ])
    }

    /// Who a sign-in signed in.
    struct SignedIn {
        var id: CredentialID
        var name: String
        var isDefault: Bool

        var sentence: String { "Signed in as \(name) (account \(id))\(isDefault ? ", the default account" : "")." }
    }

    /// Signs the account in (adding its provider first when a resource names it), saying
    /// nothing on standard output: `api --login` keeps that for the answer.
    func signIn() async throws -> SignedIn {
        // Nothing configured: the resource says where to sign in (RFC 9728).
        var found: ResourceFirst?
        if provider == nil, let first = resource.first, try await global.location.providers().isEmpty {
            guard passwordStdin || browser || device else {
                throw CLIError.input("Choose one of --username U --password-stdin, --browser or --device.")
            }
            found = try await addProvider(discoveredFrom: first, home: global.location)
        }
        let session = try await global.location.openStore()
        let entry = try await session.home.provider(named: found?.provider ?? provider)
        let client = try session.client(named: entry.name)
        if client.pingJourney == nil, !passwordStdin, !browser, !device {
            throw CLIError.input("Choose one of --username U --password-stdin, --browser or --device.")
        }
        let password = passwordStdin ? try readSecretFromStandardInput("password") : nil
        await session.retryDueOutbox()
        let tags = [Home.providerTag: entry.name]
        let countdown = Countdown()
        let credential: Credential
        do {
            switch client {
            case .pingJourney(let ping):
                guard !browser, !device, resource.isEmpty, scope == nil else {
                    throw CLIError.input(
                        "A Ping journey signs in by walking its pages; --browser, --device, --resource and --scope are not for it."
                    )
                }
                let prompts = JourneyPrompts(
                    username: username, password: password, interactive: JourneyPrompts.standardInputIsTerminal)
                credential = try await ping.signIn(
                    try await walk(ping, prompts), into: session.store, tags: tags, makeDefault: makeDefault)
            case .cognito(let cognito):
                guard resource.isEmpty, scope == nil else {
                    throw CLIError.input("--resource and --scope are for OpenID providers.")
                }
                guard let username, let password else {
                    throw CLIError.input("Cognito accounts sign in with --username and --password-stdin.")
                }
                let (store, makeDefault) = (session.store, makeDefault)
                credential = try await SignalDeferral.whileSigningIn {
                    try await cognito.signIn(
                        username: username, password: password, into: store, tags: tags, makeDefault: makeDefault)
                }
            case .openID(let openID):
                let (store, makeDefault) = (session.store, makeDefault)
                let method = method(password: password, countdown: countdown)
                // The provider's resources and this sign-in's, each once.
                let named = resource.compactMap(URL.init(string:))
                let resources =
                    named.isEmpty
                    ? nil
                    : openID.configuration.resources + named.filter { !openID.configuration.resources.contains($0) }
                let scopes = scope.map { $0.split(separator: " ").map(String.init) } ?? found?.scopes
                // Ctrl-C cancels the sign-in: a grant the provider issued meanwhile is revoked.
                credential = try await SignalDeferral.whileSigningIn {
                    try await openID.signIn(
                        method, scopes: scopes, resources: resources, into: store, tags: tags, makeDefault: makeDefault)
                }
            }
        } catch let error as ProviderError {
            await countdown.stop()
            Output.endProgress()
            // Cancelled by a signal: the process ends by it, as it would have without a sign-in.
            if error.code == .cancelled { SignalDeferral.endIfSignalled() }
            if error.code == .storage {
                throw CLIError.failed("The credential could not be stored: \(error)")
            }
            if let refusal = error.underlying as? PingError, error.endpoint == .journey {
                throw CLIError.failed(
                    "Sign-in failed: \(refusal.message ?? refusal.reason ?? "AM refused it") (AM answered \(refusal.code))."
                )
            }
            if error.code == .unsupported, passwordStdin, error.endpoint == .token {
                throw CLIError.input(
                    "The provider \(entry.name) does not allow the password grant (RFC 9700 §2.4 says it must not be used). Sign in with --browser or --device; for scripts and tests, add the provider with --allow-password-grant."
                )
            }
            throw CLIError.provider(error, doing: "Sign-in failed")
        }
        await countdown.stop()
        Output.endProgress()
        let stored: StoredCredential
        do {
            stored = try await credential.stored()
        } catch {
            throw CLIError.failed("The credential could not be read back: \(error)")
        }
        let isDefault = try await session.defaultAccountID() == stored.id
        return SignedIn(id: stored.id, name: stored.metadata.displayName ?? stored.id.rawValue, isDefault: isDefault)
    }

    /// Walks the provider's journey to its end, answering each page with `prompts`.
    private func walk(_ ping: PingJourneyProvider, _ prompts: JourneyPrompts) async throws -> JourneySession {
        var step = try await ping.startJourney()
        for _ in 0..<100 {
            switch step {
            case .success(let session):
                return session
            case .page(var page):
                if let wait = try prompts.answer(&page) { try await Task.sleep(for: wait) }
                step = try await ping.next(page)
            }
        }
        throw CLIError.failed("The journey did not end after 100 pages; nothing was signed in.")
    }

    private func method(password: String?, countdown: Countdown) -> SignInMethod {
        let deadline = Date().addingTimeInterval(TimeInterval(timeout))
        if let username, let password { return .password(username: username, password: password) }
        if browser {
            return .browser(
                listener: NIOLoopbackRedirectListener(port: redirectPort), timeout: .seconds(timeout),
                open: { [noBrowser, global] url in
                    // The URL goes to standard error (and the terminal), so standard output stays
                    // for the result. It is printed even when a browser opens, as `gh auth login
                    // --web` does; with --json, it is a document of its own first.
                    if global.json { Output.json(["action": "open", "url": url.absoluteString]) }
                    Output.instructions(["Open this URL to sign in:", url.absoluteString])
                    if !noBrowser, let opener = SystemBrowser.open(url) { Output.note("(opened with \(opener))") }
                    countdown.start(until: deadline, "Waiting for the browser")
                })
        }
        return .deviceCode(prompt: { [global] authorization in
            let uri = authorization.verificationURIComplete ?? authorization.verificationURI
            if global.json {
                var document: [String: JSONValue] = [
                    "action": .string("enter_code"), "userCode": .string(authorization.userCode),
                    "verificationUri": .string(authorization.verificationURI.absoluteString),
                    "expiresAt": .string(authorization.expiresAt.formatted(.iso8601)),
                ]
                if let complete = authorization.verificationURIComplete {
                    document["verificationUriComplete"] = .string(complete.absoluteString)
                }
                Output.json(document)
            }
            // The code and the URLs are the provider's text: escaped, one line each.
            Output.instructions([
                "Enter the code \(authorization.userCode) at \(authorization.verificationURI.absoluteString)",
                "(or open \(uri.absoluteString))",
            ])
            countdown.start(until: authorization.expiresAt, "Waiting for the device code")
        })
    }
}

/// A countdown on a terminal while the user signs in elsewhere (nothing on a pipe): a task that
/// is cancelled as soon as the sign-in ends, whichever way.
final class Countdown: Sendable {
    private let task = NIOLockedValueBox<Task<Void, Never>?>(nil)

    func start(until deadline: Date, _ text: String) {
        guard Output.errorIsTerminal else { return }
        let ticking = Task {
            while !Task.isCancelled {
                let remaining = deadline.timeIntervalSinceNow.rounded(.down)
                let left = remaining.isFinite ? Int(min(max(remaining, -1), 99 * 3_600)) : -1
                guard left >= 0 else { return }
                Output.progress("\(text)… \(left / 60):\(String(format: "%02d", left % 60)) left")
                try? await Task.sleep(for: .seconds(1))
            }
        }
        task.withLockedValue { $0 = ticking }
    }

    /// Stops the countdown and waits until it has stopped writing.
    func stop() async {
        let ticking = task.withLockedValue { current -> Task<Void, Never>? in
            defer { current = nil }
            return current
        }
        ticking?.cancel()
        await ticking?.value
    }
}

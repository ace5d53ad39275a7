import Foundation
import Latchkey
import LatchkeyCommandLine
import LatchkeyHTTP

/// A sign-in, as `latchkey login` asks for it and as `api --login` does: a plain value, so that
/// no command runs another by parsing an argument vector.
struct AccountSignIn {
    var global: GlobalOptions
    /// The provider (`nil`: the only one, or the one found from ``resources``).
    var provider: String?
    var username: String?
    var passwordStdin = false
    /// The browser sign-in; with no method named (not ``device``, no password), it is the one
    /// run at an OpenID provider.
    var browser = false
    var device = false
    /// The loopback port of the browser redirect (0: any free port).
    var redirectPort = 0
    /// Seconds to wait for the browser or the device code.
    var timeout = 300
    var makeDefault = false
    /// The scopes to ask for instead of the provider's (or the resource's).
    var scopes: [String]?
    /// The resources (RFC 8707) the grant is for; with no provider configured, the first one's
    /// authorization server is discovered.
    var resources: [String] = []
    /// With ``resources`` and no provider: the client to sign in as instead of registering one.
    var clientID: String?
    /// With the browser sign-in: print the URL only.
    var noBrowser = false
    /// With the browser sign-in (named or not): no listener; the redirect's URL is pasted on
    /// standard input.
    var paste = false
    /// Who is expected to sign in (`login_hint`).
    var loginHint: String?
    /// With ``device``: shows the code instead of the terminal (an MCP client, through
    /// `mcp-proxy`); nothing is then written here.
    var devicePrompt: (@Sendable (DeviceAuthorization) async -> Void)?

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
        // No provider named: the resource says where to sign in (RFC 9728).
        var found: ResourceFirst?
        var provider = self.provider
        if provider == nil, let first = resources.first {
            switch try await resourceProvider(for: first, home: global.location) {
            case .configured(let name): provider = name
            case .added(let added): found = added
            case .unknown: break
            }
        }
        let session = try await global.location.openStore()
        let entry = try await session.home.provider(named: found?.provider ?? provider)
        let client = try session.client(named: entry.name)
        let password = passwordStdin ? try readSecretFromStandardInput("password") : nil
        await session.retryDueOutbox()
        let tags = [Home.providerTag: entry.name]
        let countdown = Countdown()
        let credential: Credential
        do {
            switch client {
            case .pingJourney(let ping):
                guard !browser, !device, resources.isEmpty, scopes == nil else {
                    throw CLIError.input(
                        "A Ping journey signs in by walking its pages; --browser, --device, --resource and --scope are not for it."
                    )
                }
                let prompts = JourneyPrompts(
                    username: username, password: password, interactive: JourneyPrompts.standardInputIsTerminal)
                credential = try await ping.signIn(
                    try await walk(ping, prompts), into: session.store, tags: tags, makeDefault: makeDefault)
            case .cognito(let cognito):
                guard resources.isEmpty, scopes == nil else {
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
                let (store, makeDefault, loginHint) = (session.store, makeDefault, loginHint)
                let method = method(password: password, countdown: countdown)
                // The provider's resources and this sign-in's, each once.
                let named = resources.compactMap(URL.init(string:))
                let resources =
                    named.isEmpty
                    ? nil
                    : openID.configuration.resources + named.filter { !openID.configuration.resources.contains($0) }
                let scopes = self.scopes ?? found?.scopes
                // Ctrl-C cancels the sign-in: a grant the provider issued meanwhile is revoked.
                credential = try await SignalDeferral.whileSigningIn {
                    try await openID.signIn(
                        method, scopes: scopes, resources: resources, loginHint: loginHint, into: store, tags: tags,
                        makeDefault: makeDefault)
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
            // What the user pasted: not the redirect, or another sign-in's (exit 2).
            if paste, error.code == .invalidArgument || error.code == .stateMismatch {
                throw CLIError.input("Sign-in failed: \(error.reason)")
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
            // A metadata document's client refused for the device grant: its document does not
            // list it, or the server takes such a client only in the browser (nanoidp: a device
            // code outlives its cached copy of the document).
            if device, error.endpoint == .deviceAuthorization, entry.clientID.contains("://"),
                error.oauthError == .invalidClient || error.oauthError == .unauthorizedClient
            {
                throw CLIError.failed(
                    "Sign-in failed: \(error) The provider did not take the metadata document's client \(entry.clientID) for the device grant: the document must list urn:ietf:params:oauth:grant-type:device_code, and some providers take such a client only in the browser. With no browser here, sign in with --browser --paste."
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
        if paste, !device {
            return .browser(
                listener: PastedRedirect(port: redirectPort), timeout: .seconds(timeout),
                open: { [global] url in
                    // No browser opens here and no countdown runs: the terminal is the paste's.
                    if global.json { Output.json(["action": "open", "url": url.absoluteString]) }
                    Output.instructions([
                        "Open this URL in a browser, on any machine, and sign in:", url.absoluteString,
                        "The browser is then sent to a page on 127.0.0.1 that does not load. Paste its whole address here:",
                    ])
                })
        }
        if !device {
            // --browser, or no method named: the browser, as `gh auth login` does.
            return .browser(
                listener: NIOLoopbackRedirectListener(port: redirectPort), timeout: .seconds(timeout),
                open: { [noBrowser, global] url in
                    // The URL goes to standard error (and the terminal), so standard output stays
                    // for the result. It is printed even when a browser opens, as `gh auth login
                    // --web` does; with --json, it is a document of its own first.
                    if global.json { Output.json(["action": "open", "url": url.absoluteString]) }
                    Output.instructions(["Open this URL to sign in:", url.absoluteString])
                    if noBrowser {
                    } else if let opener = SystemBrowser.open(url) {
                        Output.note("(opened with \(opener))")
                    } else {
                        Output.note(
                            "(no browser could be opened here: where the redirect cannot reach this machine, sign in with --device, or --browser --paste)"
                        )
                    }
                    countdown.start(until: deadline, "Waiting for the browser")
                })
        }
        if let devicePrompt { return .deviceCode(prompt: devicePrompt) }
        return .deviceCode(prompt: { [global] authorization in
            let uri = authorization.verificationURIComplete ?? authorization.verificationURI
            if global.json {
                // RFC 8628 §3.2's names, so that a program reads it as it would the provider's answer.
                var document: [String: JSONValue] = [
                    "action": .string("enter_code"), "user_code": .string(authorization.userCode),
                    "verification_uri": .string(authorization.verificationURI.absoluteString),
                    "expires_in": .number(max(0, authorization.expiresAt.timeIntervalSinceNow.rounded(.down))),
                ]
                if let complete = authorization.verificationURIComplete {
                    document["verification_uri_complete"] = .string(complete.absoluteString)
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

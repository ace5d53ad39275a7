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
    @Flag(
        help:
            "Sign in through the browser (authorization code with PKCE and a loopback redirect): what an OpenID provider's sign-in is when no other method is named."
    ) var browser = false
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
    @Option(
        help:
            "Who is expected to sign in (an email address or username): sent as login_hint, in the browser's request or the device code's."
    )
    var loginHint: String?
    @Flag(
        help:
            "With --browser: bind no port here. Print the URL to open on any machine, then read from standard input the whole address the browser was sent to after signing in (a page that does not load), and check and redeem it."
    )
    var paste = false

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
        guard (0...65_535).contains(redirectPort) else { throw ValidationError("--redirect-port must be 0 to 65535.") }
        if paste, device { throw ValidationError("--paste goes with the browser sign-in, not --device.") }
        if loginHint != nil, passwordStdin {
            throw ValidationError("--login-hint goes with the browser or device sign-in.")
        }
        if paste, passwordStdin {
            throw ValidationError(
                "--paste reads the redirect on standard input, where --password-stdin reads the password.")
        }
        for resource in resource where !ResourceToken.isValidResource(resource) {
            throw ValidationError("--resource must be an absolute URI without a fragment (RFC 8707): \(resource)")
        }
    }

    func run() async throws {
        let signedIn = try await options.signIn()
        Output.report(
            global, signedIn.sentence,
            [
                "id": .string(signedIn.id.rawValue), "account": .string(signedIn.name),
                "isDefault": .bool(signedIn.isDefault),
            ])
    }

    /// The sign-in these options ask for.
    var options: AccountSignIn {
        AccountSignIn(
            global: global, provider: provider, username: username, passwordStdin: passwordStdin, browser: browser,
            device: device, redirectPort: redirectPort, timeout: timeout, makeDefault: makeDefault,
            scopes: scope.map { $0.split(separator: " ").map(String.init) }, resources: resource, clientID: clientID,
            noBrowser: noBrowser, paste: paste, loginHint: loginHint)
    }
}

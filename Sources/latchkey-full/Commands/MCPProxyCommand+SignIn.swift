import Foundation
import Latchkey
import LatchkeyCommandLine
import LatchkeyMCP

/// `mcp-proxy`'s sign-in through its client: where the MCP host shows URLs (URL-mode
/// elicitation), an account that must sign in again does so by a device code whose page the
/// host opens, without the user leaving the editor.
extension MCPProxyCommand {
    /// The proxy's ``MCPProxy/SignIn`` for the account `again` describes, for `resource`: the
    /// device grant at the account's provider, with the account's `login_hint`, its page shown
    /// by the client. The client's "decline", or no answer before the code expires, ends it.
    static func signIn(_ again: AccountReSignIn, resource: URL, global: GlobalOptions) -> MCPProxy.SignIn {
        { show in
            var signIn = AccountSignIn(
                global: global, provider: again.provider, device: true, resources: [resource.absoluteString])
            signIn.loginHint = again.loginHint
            signIn.devicePrompt = { authorization in
                let page = authorization.verificationURIComplete ?? authorization.verificationURI
                let request = MCPURLElicitation(
                    url: page,
                    message:
                        "Sign in again to use \(resource.absoluteString): enter the code \(authorization.userCode) at \(authorization.verificationURI.absoluteString) (the page may show it filled in)."
                )
                let accepted = await Self.answer(of: show, request, before: authorization.expiresAt)
                // Declined: the sign-in ends here, and no code is polled for.
                if !accepted { withUnsafeCurrentTask { $0?.cancel() } }
            }
            do {
                _ = try await signIn.signIn()
                Output.note("Signed in again through the MCP client.")
                return true
            } catch {
                Output.error("The sign-in through the MCP client did not complete: \(error)")
                return false
            }
        }
    }

    /// `show(request)`'s answer, or `false` once `deadline` has passed without one.
    private static func answer(
        of show: @escaping @Sendable (MCPURLElicitation) async -> Bool, _ request: MCPURLElicitation,
        before deadline: Date
    ) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await show(request) }
            group.addTask {
                try? await Task.sleep(for: .seconds(max(0, deadline.timeIntervalSinceNow)))
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }
}

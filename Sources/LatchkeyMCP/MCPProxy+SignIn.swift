public import Foundation
import Latchkey
import Logging

/// A page the proxy asks its client to show the user (MCP 2025-11-25 URL-mode elicitation): a
/// device sign-in's verification page, say.
public struct MCPURLElicitation: Sendable, Hashable {
    /// The page to open.
    public var url: URL
    /// What the client shows with it: why, and what to do there.
    public var message: String

    /// A request to show `url` with `message`.
    public init(url: URL, message: String) {
        self.url = url
        self.message = message
    }
}

extension MCPProxy {
    /// How the proxy signs the account in again: handed a function that asks the client to show
    /// the user a page and answers whether they went on to it, it answers whether the account
    /// is signed in again.
    public typealias SignIn = @Sendable (_ show: @escaping @Sendable (MCPURLElicitation) async -> Bool) async -> Bool

    /// The id of the proxy's own requests to its client: never one a server's request carries
    /// (those are forwarded with the server's ids, which are not the proxy's to route).
    static let ownRequestPrefix = "latchkey-sign-in-"

    /// Whether the request that just failed with a sign-in-needing ``ended`` may be sent again:
    /// the account was signed in again through the client (``Configuration/signIn``, where the
    /// client shows URLs). One sign-in is tried per proxy: requests failing while it runs wait
    /// for it; once it has ended, its outcome stands, and nothing is asked again (a sign-in the
    /// user refused is not asked for at every call).
    func signedInAgain() async -> Bool {
        guard ended != nil, showsURLs, let signIn = configuration.signIn else { return false }
        if let attempt = signInAttempt { return await attempt.value }
        let attempt = Task { await signIn { request in await self.elicit(request) } }
        signInAttempt = attempt
        let signedIn = await attempt.value
        if signedIn {
            ended = nil
            if let elicitation = lastElicitation {
                await deliverOwn(
                    .object([
                        "jsonrpc": .string("2.0"), "method": .string("notifications/elicitation/complete"),
                        "params": .object(["elicitationId": .string(elicitation)]),
                    ]))
            }
        }
        logger.debug("a sign-in through the client ended", metadata: ["signedIn": "\(signedIn)"])
        return signedIn
    }

    /// Asks the client to show `request` (`elicitation/create` in URL mode) and answers whether
    /// the user accepted; `false` when the client declines, cancels, or goes away first.
    func elicit(_ request: MCPURLElicitation) async -> Bool {
        let id = JSONValue.string(Self.ownRequestPrefix + UUID().uuidString)
        let elicitation = UUID().uuidString
        lastElicitation = elicitation
        let (answers, answer) = AsyncStream<Bool>.makeStream()
        elicitations[id] = answer
        await deliverOwn(
            .object([
                "jsonrpc": .string("2.0"), "id": id, "method": .string("elicitation/create"),
                "params": .object([
                    "mode": .string("url"), "elicitationId": .string(elicitation),
                    "url": .string(request.url.absoluteString), "message": .string(request.message),
                ]),
            ]))
        for await accepted in answers { return accepted }
        return false
    }

    /// Routes the client's answer to one of the proxy's own requests; `false` when `peek` is
    /// not one (it is then forwarded to the server).
    func answeredOwnRequest(_ peek: JSONRPCPeek) -> Bool {
        guard peek.isResponse, let id = peek.id, let waiting = elicitations.removeValue(forKey: id) else {
            return false
        }
        waiting.yield(peek.action == "accept")
        waiting.finish()
        return true
    }

    /// Ends every request of the proxy's own that the client has not answered, and the sign-in
    /// they were for: the client is gone.
    func abandonOwnRequests() {
        signInAttempt?.cancel()
        for waiting in elicitations.values { waiting.finish() }
        elicitations = [:]
    }

    private func deliverOwn(_ message: JSONValue) async {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        guard let data = try? encoder.encode(message) else { return }
        await deliver(data)
    }
}

public import Foundation
public import LatchkeyRecords

/// The limits of one agent socket: which accounts, resources and scopes it hands tokens out
/// for, how long a token it hands out may still live, whether each use is confirmed on the
/// agent's terminal, and whether it hands out ID tokens or takes `stop`. The owner's socket has
/// none (``owner``); a socket made for forwarding (`latchkey agent --forward`) has the ones it
/// was given. A pure value: ``decide(_:)`` says what a request becomes, without I/O.
public struct AgentPolicy: Sendable, Hashable {
    /// The accounts (as they were named) whose tokens it hands out; every account when `nil`.
    public var accounts: [String]?
    /// The resources whose tokens it hands out; any, the account's own token included, when `nil`.
    public var resources: [String]?
    /// The scopes a token may carry at most; the grant's when `nil`.
    public var scopes: [String]?
    /// The longest a token it hands out may still be valid, in seconds.
    public var maximumLifetime: TimeInterval?
    /// Whether each use waits for a yes on the agent's terminal (as `ssh-add -c`).
    public var confirmsEachUse: Bool
    /// Whether it hands out ID tokens.
    public var allowsIDTokens: Bool
    /// Whether it takes ``AgentRequest/Operation/stop``.
    public var allowsStop: Bool

    /// Creates the limits of a socket.
    public init(
        accounts: [String]? = nil, resources: [String]? = nil, scopes: [String]? = nil,
        maximumLifetime: TimeInterval? = nil, confirmsEachUse: Bool = false, allowsIDTokens: Bool = false,
        allowsStop: Bool = false
    ) {
        self.accounts = accounts
        self.resources = resources
        self.scopes = scopes
        self.maximumLifetime = maximumLifetime
        self.confirmsEachUse = confirmsEachUse
        self.allowsIDTokens = allowsIDTokens
        self.allowsStop = allowsStop
    }

    /// The owner's socket: every account, resource and scope; ID tokens; `stop`.
    public static let owner = AgentPolicy(allowsIDTokens: true, allowsStop: true)

    /// What the socket does with a request.
    public enum Decision: Sendable, Hashable {
        /// Answer this request: the one asked, narrowed to the socket's limits (its one account,
        /// its one resource, its scopes, when the request named none).
        case answer(AgentRequest)
        /// Refuse it, saying why.
        case refuse(String)
    }

    /// What the socket does with `request`.
    public func decide(_ request: AgentRequest) -> Decision {
        var request = request
        switch request.operation {
        case .refreshToken:
            return .refuse("The agent never hands out a refresh token: it refreshes itself, for everyone.")
        case .idToken where !allowsIDTokens:
            return .refuse("This socket does not hand out ID tokens (`latchkey agent --forward --allow-id-token`).")
        case .stop:
            return allowsStop ? .answer(request) : .refuse("This socket cannot stop the agent.")
        case .userInfo where resources != nil:
            return .refuse("This socket is limited to resources; the provider's userinfo is not one of them.")
        case .gitToken where resources != nil:
            return .refuse("This socket is limited to resources; a git host is not one of them.")
        default: break
        }
        switch Self.narrowed(request.account, to: accounts, "an account", "of") {
        case .success(let account): request.account = account
        case .failure(let refusal): return .refuse(refusal.reason)
        }
        guard request.operation != .reject, request.operation != .gitToken else { return .answer(request) }
        // A description names the resource only to hear this socket's refusal early.
        if request.operation == .describe {
            guard let resource = request.resource, let resources, !resources.contains(resource) else {
                return .answer(request)
            }
            return .refuse("This socket does not hand out tokens for \(resource).")
        }
        switch Self.narrowed(request.resource, to: resources, "a resource", "for") {
        case .success(let resource): request.resource = resource
        case .failure(let refusal): return .refuse(refusal.reason)
        }
        if let scopes {
            if let asked = request.scopes {
                let beyond = asked.filter { !scopes.contains($0) }
                guard beyond.isEmpty else {
                    return .refuse("This socket does not hand out tokens for \(beyond.joined(separator: " ")).")
                }
            } else {
                request.scopes = scopes
            }
        }
        return .answer(request)
    }

    /// Why a request was refused.
    struct Refusal: Error {
        var reason: String
    }

    /// What was `asked` (an account, a resource), within `allowed`: as asked when it is one of
    /// them, their one value when nothing was asked, refused otherwise. Anything when `allowed`
    /// is `nil`.
    private static func narrowed(_ asked: String?, to allowed: [String]?, _ noun: String, _ preposition: String)
        -> Result<String?, Refusal>
    {
        guard let allowed else { return .success(asked) }
        if let asked {
            return allowed.contains(asked)
                ? .success(asked)
                : .failure(Refusal(reason: "This socket does not hand out tokens \(preposition) \(asked)."))
        }
        guard allowed.count == 1 else {
            let listed = allowed.joined(separator: ", ")
            return .failure(Refusal(reason: "Name \(noun): this socket hands out tokens \(preposition) \(listed)."))
        }
        return .success(allowed[0])
    }

    /// Whether a token that expires at `expiresAt` may be handed out at `now`: one that lives
    /// longer than ``maximumLifetime`` (or says nothing of its expiry) may not.
    public func admits(expiresAt: Date?, now: Date) -> Bool {
        guard let maximumLifetime else { return true }
        guard let expiresAt else { return false }
        return expiresAt.timeIntervalSince(now) <= maximumLifetime
    }
}

import Foundation

/// Whose sign-out.
public enum SignOutScope: Sendable, Hashable {
    /// The default (active) account.
    case current
    /// One account.
    case account(CredentialID)
    /// Every account in the store.
    case all
}

/// What happens when a server step fails.
public enum SignOutPolicy: String, Sendable, Hashable, CaseIterable {
    /// Sign out on this device whatever the server says; failed revocations go to the outbox
    /// and the result is `.partial` (Amplify's behaviour, without its live-token hole).
    case alwaysLocal = "always-local"
    /// Keep the local tokens and fail when a server step fails (the Cognito walkthrough's
    /// behaviour): the user is still signed in and can try again.
    case serverFirst = "server-first"
}

/// An error that says whether trying again later can help: a sign-out hook's error that conforms
/// is reported retryable or not as it says (any other hook error is reported not retryable).
/// Latchkey's ``ProviderError`` and ``StorageError`` conform.
public protocol RetryableError: Error {
    /// Whether the same work may succeed if tried again later.
    var isRetryable: Bool { get }
}

extension ProviderError: RetryableError {}
extension StorageError: RetryableError {}

/// A named step of the application's, run at sign-out once the account has left this device,
/// and reported like the others: deregistering a push token, say.
///
/// It runs after the account's credential transaction, with the lease released (so it may use
/// the store freely, and a slow hook holds up no other process), under its own deadline
/// (``timeout``, by the store's clock). It is handed the credential as it was read. It does not
/// run when the account is still signed in on this device (a server step failed under
/// ``SignOutPolicy/serverFirst``, say): its step is then reported skipped.
public struct SignOutHook: Sendable {
    /// The step's name in the report.
    public var name: String
    /// How long it may run; past that it is cancelled and reported failed (retryable).
    public var timeout: Duration
    /// The work; it receives the credential being signed out. What it throws is reported as the
    /// step's error, as it is; throw a ``RetryableError`` to say whether a retry can help.
    public var run: @Sendable (StoredCredential) async throws -> Void

    /// Creates a hook.
    public init(
        _ name: String, timeout: Duration = .seconds(30),
        run: @escaping @Sendable (StoredCredential) async throws -> Void
    ) {
        self.name = name
        self.timeout = timeout
        self.run = run
    }
}

/// A hook that did not finish within its ``SignOutHook/timeout``.
public struct SignOutHookTimedOut: Error, Sendable, RetryableError, CustomStringConvertible {
    /// The hook's name.
    public var name: String
    /// Its deadline.
    public var timeout: Duration

    /// A retry may find the service it calls quicker.
    public var isRetryable: Bool { true }

    public var description: String { "the hook \(name) did not finish within \(timeout)" }
}

/// How to sign out.
public struct SignOutOptions: Sendable {
    /// Sign out on every device (the provider's global sign-out).
    public var global: Bool
    /// End the provider's session too (RP-initiated logout).
    public var endProviderSession: Bool
    /// Revoke the tokens (RFC 7009). On by default.
    public var revokeTokens: Bool
    /// What a failed server step means.
    public var policy: SignOutPolicy
    /// The application's own steps.
    public var hooks: [SignOutHook]

    /// Creates options; the defaults revoke the tokens and sign out on this device only.
    public init(
        global: Bool = false, endProviderSession: Bool = false, revokeTokens: Bool = true,
        policy: SignOutPolicy = .alwaysLocal, hooks: [SignOutHook] = []
    ) {
        self.global = global
        self.endProviderSession = endProviderSession
        self.revokeTokens = revokeTokens
        self.policy = policy
        self.hooks = hooks
    }

    /// This device: revoke the tokens, remove them.
    public static var local: SignOutOptions { SignOutOptions() }
    /// Every device: global sign-out, revoke, remove.
    public static var global: SignOutOptions { SignOutOptions(global: true) }
}

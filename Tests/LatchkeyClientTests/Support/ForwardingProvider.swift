import Foundation
import Latchkey

/// A real provider with one behaviour changed: what it can revoke on its own, something that
/// happens just before each refresh request goes out (another program rotating the token), or
/// what it makes of each refresh answer (an application's provider refusing it, say).
struct ForwardingProvider: IdentityProvider {
    let inner: any IdentityProvider
    var revocableKinds: Set<TokenKind>
    var beforeExchange: @Sendable (Token) async throws(ProviderError) -> Void = { _ in }
    /// What the refresh answers: by default the inner provider's answer.
    var answering: @Sendable (RefreshAnswer) -> RefreshAnswer = { $0 }

    init(
        _ inner: any IdentityProvider, revocableKinds: Set<TokenKind>? = nil,
        beforeExchange: @escaping @Sendable (Token) async throws(ProviderError) -> Void = { _ in }
    ) {
        self.inner = inner
        self.revocableKinds = revocableKinds ?? inner.revocableKinds
        self.beforeExchange = beforeExchange
    }

    var identity: ProviderIdentity { inner.identity }

    func prepareRefresh(of token: Token) async throws(ProviderError) { try await inner.prepareRefresh(of: token) }

    func exchangeRefreshToken(of token: Token) async throws(ProviderError) -> RefreshAnswer {
        try await beforeExchange(token)
        return answering(try await inner.exchangeRefreshToken(of: token))
    }

    func verifyRefreshedIDToken(of refreshed: Token, previous: Token) async throws(ProviderError) {
        try await inner.verifyRefreshedIDToken(of: refreshed, previous: previous)
    }

    func revoke(_ value: String, kind: TokenKind) async throws(ProviderError) {
        try await inner.revoke(value, kind: kind)
    }

    func userInfo(accessToken: String) async throws(ProviderError) -> [String: JSONValue] {
        try await inner.userInfo(accessToken: accessToken)
    }

    func introspect(_ value: String, kind: TokenKind) async throws(ProviderError) -> Introspection {
        try await inner.introspect(value, kind: kind)
    }

    func globalSignOut(accessToken: String) async throws(ProviderError) {
        try await inner.globalSignOut(accessToken: accessToken)
    }

    func endSession(idToken: String?) async throws(ProviderError) -> URL? {
        try await inner.endSession(idToken: idToken)
    }

    func supportsGlobalSignOut() async throws(ProviderError) -> Bool { try await inner.supportsGlobalSignOut() }
}

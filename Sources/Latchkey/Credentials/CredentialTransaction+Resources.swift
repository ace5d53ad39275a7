package import Foundation
import Logging

extension CredentialTransaction {
    /// An access token for `resource` and `scopes` valid for `minimumValidity` seconds: the one
    /// kept with the credential, unless another holder's is missing or too old, in which case
    /// the refresh token asks for one (RFC 8707 §2.2) and the answer is stored before anything
    /// else — a rotated refresh token with it — as every refresh is. The account's own access
    /// token is left as it is.
    package func resourceToken(
        _ resource: String?, scopes: [String]?, minimumValidity: TimeInterval, with provider: any IdentityProvider
    ) async -> Result<ResourceToken, ProviderError> {
        await UninterruptibleWork.run { () async -> Result<ResourceToken, ProviderError> in
            do throws(ProviderError) {
                return .success(
                    try await self.fetchResourceToken(
                        resource, scopes: scopes, minimumValidity: minimumValidity, with: provider))
            } catch {
                return .failure(error)
            }
        }
    }

    private func fetchResourceToken(
        _ resource: String?, scopes: [String]?, minimumValidity: TimeInterval, with provider: any IdentityProvider
    ) async throws(ProviderError) -> ResourceToken {
        guard var current = try await stored() else { throw .storage(.credentialNotFound(id)) }
        let key = ResourceToken.key(resource: resource, scopes: scopes)
        if let kept = current.token.resourceTokens[key], kept.isValid(for: minimumValidity, at: store.clock.date) {
            return kept
        }
        var answer: Token
        do {
            store.logger.debug("asking for a resource's access token", metadata: ["credential": "\(id)"])
            let token = current.token
            answer = try await keepingRotatedRefreshToken(of: token) { () async throws(ProviderError) in
                try await provider.exchangeRefreshToken(of: token, resource: resource, scopes: scopes)
            }
        } catch  where error.requiresSignIn {
            guard let again = try await storedAgain(), again.token.refreshToken != current.token.refreshToken else {
                await markNeedsSignIn(rejected: current.token.refreshToken)
                throw error
            }
            current = again
            answer = try await keepingRotatedRefreshToken(of: again.token) { () async throws(ProviderError) in
                try await provider.exchangeRefreshToken(of: again.token, resource: resource, scopes: scopes)
            }
        }
        guard let accessToken = answer.accessToken else {
            throw ProviderError(
                .invalidResponse, endpoint: .token, reason: "The token endpoint gave no access token for the resource.")
        }
        let token = ResourceToken(
            resource: resource, requestedScopes: scopes, accessToken: accessToken, tokenType: answer.tokenType,
            scopes: answer.scopes, issuedAt: answer.issuedAt, expiresAt: answer.expiresAt)
        let refreshToken = answer.refreshToken
        do {
            try await update { credential in
                if let refreshToken { credential.token.refreshToken = refreshToken }
                credential.token.resourceTokens[key] = token
            }
        } catch {
            throw .storage(error)
        }
        return token
    }
}

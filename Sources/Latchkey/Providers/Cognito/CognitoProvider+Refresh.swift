import Foundation
import Logging

extension CognitoProvider {
    /// Refreshes through `REFRESH_TOKEN_AUTH`, or through `GetTokensFromRefreshToken` when the
    /// app client rotates refresh tokens (configured, or found out from Cognito's refusal of
    /// `REFRESH_TOKEN_AUTH`): the new refresh token it returns is stored with the rest, in the
    /// credential's transaction, so every process sharing the store refreshes once with it.
    public func exchangeRefreshToken(of token: Token) async throws(ProviderError) -> RefreshAnswer {
        guard let refreshToken = token.refreshToken else {
            throw ProviderError(.signInRequired, endpoint: .token, reason: "The credential has no refresh token.")
        }
        if configuration.refreshTokenRotation ?? rotatesRefreshTokens ?? false {
            return try await rotatingRefresh(refreshToken, of: token)
        }
        do {
            let answer = try await call(
                "InitiateAuth",
                [
                    "AuthFlow": .string("REFRESH_TOKEN_AUTH"), "ClientId": .string(configuration.clientID),
                    "AuthParameters": .object(["REFRESH_TOKEN": .string(refreshToken)]),
                ], secrets: [refreshToken])
            return .token(try await self.token(from: answer, previous: token, verifyingIDToken: false))
        } catch {
            if let refused = RotatedRefreshToken.answer(refusing: error) { return refused }
            guard configuration.refreshTokenRotation == nil, Self.refusesForRotation(error) else {
                throw Self.refreshRefusal(error)
            }
            logger.debug("the app client rotates refresh tokens; refreshing with GetTokensFromRefreshToken")
            rotatesRefreshTokens = true
            return try await rotatingRefresh(refreshToken, of: token)
        }
    }

    /// `GetTokensFromRefreshToken`: new tokens, and a new refresh token when the client rotates.
    private func rotatingRefresh(_ refreshToken: String, of token: Token) async throws(ProviderError) -> RefreshAnswer {
        var body: [String: JSONValue] = [
            "ClientId": .string(configuration.clientID), "RefreshToken": .string(refreshToken),
        ]
        if !configuration.refreshClientMetadata.isEmpty {
            body["ClientMetadata"] = .object(configuration.refreshClientMetadata.mapValues(JSONValue.string))
        }
        do {
            let answer = try await call("GetTokensFromRefreshToken", body, secrets: [refreshToken])
            return .token(try await self.token(from: answer, previous: token, verifyingIDToken: false))
        } catch {
            if let refused = RotatedRefreshToken.answer(refusing: error) { return refused }
            throw Self.refreshRefusal(error)
        }
    }

    /// Whether Cognito refused `REFRESH_TOKEN_AUTH` because the app client rotates refresh
    /// tokens (AWS: it "can't" be used there): an invalid-parameter refusal, or one that names
    /// rotation.
    static func refusesForRotation(_ error: ProviderError) -> Bool {
        guard let cognito = error.underlying as? CognitoError else { return false }
        return cognito.kind == .invalidParameter || cognito.message?.lowercased().contains("rotation") == true
    }

    /// A refresh's refusal: a refused or rotated-out refresh token means the session is over.
    static func refreshRefusal(_ error: ProviderError) -> ProviderError {
        guard let cognito = error.underlying as? CognitoError,
            cognito.kind == .notAuthorized || cognito.kind == .refreshTokenReuse
        else { return error }
        return ProviderError(
            .signInRequired, endpoint: .token,
            reason: cognito.kind == .refreshTokenReuse
                ? "Cognito refused a refresh token that rotation had replaced; sign in again."
                : "Cognito rejected the refresh token; sign in again.",
            errorDescription: error.errorDescription, status: error.status, underlying: cognito)
    }
}

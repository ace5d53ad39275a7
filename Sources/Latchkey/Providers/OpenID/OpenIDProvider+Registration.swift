public import Foundation
import HTTPTypes
public import Logging

extension OpenIDProvider {
    /// Registers a new client at the provider `issuer` names (RFC 7591 dynamic client
    /// registration), through the `registration_endpoint` its metadata advertises.
    ///
    /// ```swift
    /// let client = try await OpenIDProvider.register(
    ///     ClientRegistrationRequest(clientName: "my tool", redirectURIs: [loopback]),
    ///     issuer: issuer, transport: transport)
    /// let provider = OpenIDProvider(
    ///     configuration: OpenIDProviderConfiguration(
    ///         issuer: issuer, clientID: client.clientID, authentication: client.authentication),
    ///     transport: transport)
    /// ```
    ///
    /// - Parameter initialAccessToken: the token a provider that does not register anyone asks
    ///   for (RFC 7591 §3.1), sent as a bearer token.
    /// - Throws: ``ProviderError`` with ``ProviderError/Code/missingEndpoint`` when the provider
    ///   offers no registration, or its refusal (`invalid_redirect_uri`,
    ///   `invalid_client_metadata`, RFC 7591 §3.2.2).
    public static func register(
        _ request: ClientRegistrationRequest, issuer: URL, initialAccessToken: String? = nil,
        transport: any HTTPTransport, logger: Logger? = nil
    ) async throws(ProviderError) -> RegisteredClient {
        let discovery = OpenIDProvider(
            configuration: OpenIDProviderConfiguration(issuer: issuer, clientID: ""), transport: transport,
            logger: logger)
        let url: URL
        do {
            url = try await discovery.endpoint(.registration)
        } catch  where error.code == .missingEndpoint {
            throw ProviderError(
                .missingEndpoint, endpoint: .registration,
                reason: "The provider offers no client registration (no registration_endpoint in its metadata).")
        }
        var headers: [HTTPField.Name: String] = [:]
        if let initialAccessToken { headers[.authorization] = "Bearer \(initialAccessToken)" }
        let answer = try await discovery.wire.json(
            .json(
                .registration, url, request.document, headers: headers,
                secrets: [initialAccessToken].compactMap { $0 }))
        let client = try RegisteredClient(answer: answer)
        discovery.logger.debug(
            "client registered",
            metadata: ["client_id": "\(client.clientID)", "method": "\(client.authenticationMethod)"])
        return client
    }
}

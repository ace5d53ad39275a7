import Foundation
import HTTPTypes
import Hummingbird

/// The protected resources served beside the provider (``DevProviderConfiguration/ProtectedResource``):
/// their metadata (RFC 9728 §3) and the resources themselves, which challenge as RFC 6750 §3
/// and RFC 9728 §5.1 say.
extension Endpoints {
    /// The URL of `resource` (its resource identifier).
    func url(of resource: DevProviderConfiguration.ProtectedResource) async -> String {
        await state.issuer + resource.path
    }

    /// The URL of the metadata of `resource`.
    func metadataURL(of resource: DevProviderConfiguration.ProtectedResource) async -> String {
        await state.issuer + "/.well-known/oauth-protected-resource" + resource.path
    }

    /// `GET /.well-known/oauth-protected-resource/PATH`: the resource's metadata, a published
    /// document as the provider's own are (`max-age`, `ETag`), counted as `resource_metadata`.
    func resourceMetadata(_ resource: DevProviderConfiguration.ProtectedResource, _ request: Request) async
        -> Response
    {
        faults.increment("resource_metadata")
        let metadata: [String: Any] = [
            "resource": await url(of: resource),
            "authorization_servers": [await state.issuer],
            "scopes_supported": resource.scopesSupported ?? resource.scopes,
            "bearer_methods_supported": ["header"],
            "resource_name": "Latchkey development resource \(resource.path)",
        ]
        return Reply.document(
            metadata, maxAge: configuration.documentMaxAge, modified: state.started, request: request)
    }

    /// The resource: its user for a usable token issued for it (or for no resource) with the
    /// scopes it needs; else its challenge.
    func protectedResource(_ resource: DevProviderConfiguration.ProtectedResource, _ request: Request) async
        -> Response
    {
        let identifier = await url(of: resource)
        let metadata = await metadataURL(of: resource)
        let scope = resource.scopes.isEmpty ? "" : #", scope="\#(resource.scopes.joined(separator: " "))""#
        func challenge(_ status: HTTPResponse.Status, error: String?, _ description: String) -> Response {
            var value = #"Bearer resource_metadata="\#(metadata)""# + scope
            if let error { value += #", error="\#(error)", error_description="\#(description)""# }
            var response = Reply.json(
                ["error": error ?? "unauthorized", "error_description": description], status: status)
            response.headers[.wwwAuthenticate] = value
            return response
        }
        guard let header = request.headers[.authorization], header.lowercased().hasPrefix("bearer ") else {
            return challenge(.unauthorized, error: nil, "This resource needs an access token.")
        }
        let token = String(header.dropFirst("bearer ".count)).trimmingCharacters(in: .whitespaces)
        guard let access = try? await state.resourceAccess(accessToken: token) else {
            return challenge(.unauthorized, error: "invalid_token", "The access token is not valid.")
        }
        if let audience = access.audience, audience != identifier {
            return challenge(.unauthorized, error: "invalid_token", "The access token was issued for another resource.")
        }
        guard Set(resource.scopes).isSubset(of: access.scopes) else {
            return challenge(
                .forbidden, error: "insufficient_scope", "The access token lacks a scope this resource needs.")
        }
        return Reply.json(["resource": identifier, "username": access.username, "scopes": access.scopes])
    }
}

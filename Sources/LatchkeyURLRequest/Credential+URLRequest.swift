public import Foundation
import HTTPTypes
public import Latchkey

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// `URLRequest` support, in a module of its own: on Linux `URLRequest` lives in
/// FoundationNetworking, which loads libcurl (and gnutls, krb5, ldap) into every program that
/// imports it. The core `Latchkey` module works with `HTTPRequest` and loads none of that.
extension Credential {
    /// `request` with an access token valid for at least `minimumValidity` seconds (refreshed
    /// first when needed), as ``Latchkey/Credential/authorized(_:resource:scopes:minimumValidity:)``
    /// puts it on an `HTTPRequest`: bearer, or DPoP with a proof for this method and URL.
    public func authorized(
        _ request: URLRequest, resource: URL? = nil, scopes: [String]? = nil, minimumValidity: TimeInterval = 60
    ) async throws(ProviderError) -> URLRequest {
        let presented = try await presented(resource: resource, scopes: scopes, minimumValidity: minimumValidity)
        let method = HTTPRequest.Method(request.httpMethod ?? "GET") ?? .get
        guard let url = request.url else {
            var request = request
            request.setValue("Bearer \(presented.accessToken)", forHTTPHeaderField: "Authorization")
            return request
        }
        guard EndpointSecurity.isRequestTarget(url) else {
            throw .unusableURL(url, endpoint: nil, named: "the request's URL")
        }
        let proved = try await presented.authorize(HTTPRequest(method: method, url: url))
        var request = request
        for field in proved.headerFields { request.setValue(field.value, forHTTPHeaderField: field.name.rawName) }
        return request
    }
}

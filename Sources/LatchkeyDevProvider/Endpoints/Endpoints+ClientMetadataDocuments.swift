import AsyncHTTPClient
import Foundation
import Hummingbird
import NIOCore
import NIOHTTP1

extension Endpoints {
    /// A client's POST to `endpoint` (the token endpoint, revocation, device authorization): its
    /// form, and the client it authenticates as (RFC 6749 §2.3), adopted from its metadata
    /// document first when its id is one.
    func clientRequest(_ request: Request, to endpoint: String) async throws -> (
        Parameters, DevProviderConfiguration.Client
    ) {
        guard request.method == .post else { throw OAuthFailure.invalidRequest("\(endpoint) takes POST.") }
        let form = try await Parameters.of(request)
        try await adoptClient(named: try form["client_id"])
        return (form, try ClientAuthentication.authenticate(request, form, clients: state.clients))
    }

    /// Adopts the client a URL client id names (OAuth Client ID Metadata Document, the draft
    /// MCP's authorization builds on): its document is fetched from that URL the first time the
    /// id is seen, checked, and the public client it describes kept as long as the provider runs.
    /// An id that is no document URL, or a client already known, is left alone.
    ///
    /// - Throws: `invalid_client` when the document cannot be fetched or does not describe a
    ///   public client under that very id.
    func adoptClient(named clientID: String?) async throws {
        guard let clientID, ClientMetadataDocument.isDocumentURL(clientID), state.clients.client(clientID) == nil
        else { return }
        var request = HTTPClientRequest(url: clientID)
        request.headers.add(name: "Accept", value: "application/json")
        guard let response = try? await ClientMetadataDocument.fetcher.execute(request, timeout: .seconds(10)),
            response.status == .ok,
            let body = try? await response.body.collect(upTo: ClientMetadataDocument.maximumSize),
            let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
        else {
            throw OAuthFailure.invalidClient("The client metadata document at \(clientID) could not be fetched.")
        }
        let client = try ClientMetadataDocument.client(
            describedBy: object, at: clientID, offering: configuration.offeredScopes)
        state.clients.adopt(client)
    }
}

/// A client's metadata published at the URL that is its id (draft-ietf-oauth-client-id-metadata-
/// document): what the provider checks before it takes one.
enum ClientMetadataDocument {
    /// The largest document the provider reads (the draft's recommended limit is 5 KB).
    static let maximumSize = 5 * 1024

    /// The client that fetches documents, never shut down (as `HTTPClient.shared` is): it
    /// follows no redirect, and a refused connection is an answer, not retried until the timeout.
    static let fetcher: HTTPClient = {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    /// Whether `clientID` names a document: an https URL with a path and no fragment, or, this
    /// being a development provider, plain http to loopback.
    static func isDocumentURL(_ clientID: String) -> Bool {
        guard let url = URL(string: clientID), let host = url.host, url.fragment == nil, url.path.count > 1,
            !url.path.split(separator: "/").contains(where: { $0 == "." || $0 == ".." })
        else { return false }
        let loopback = ["127.0.0.1", "localhost", "::1"].contains(host)
        return url.scheme == "https" || (url.scheme == "http" && loopback)
    }

    /// The public client `object` describes, fetched from `url`: its `client_id` must be that URL,
    /// it has no secret, and its metadata is checked as a registration's is (RFC 7591 §2).
    static func client(describedBy object: [String: Any], at url: String, offering offered: [String]) throws
        -> DevProviderConfiguration.Client
    {
        guard object["client_id"] as? String == url else {
            throw OAuthFailure.invalidClient("The client metadata document's client_id is not its URL.")
        }
        guard object["client_secret"] == nil else {
            throw OAuthFailure.invalidClient("A client metadata document holds no secret.")
        }
        var described = object
        described["token_endpoint_auth_method"] = object["token_endpoint_auth_method"] ?? "none"
        let metadata: RegistrationMetadata
        do {
            metadata = try RegistrationMetadata(described, offering: offered)
        } catch let failure as OAuthFailure {
            throw OAuthFailure.invalidClient("The client metadata document is not acceptable: \(failure.description)")
        }
        guard metadata.authMethod == "none" else {
            throw OAuthFailure.invalidClient("A client of a metadata document authenticates with none.")
        }
        return DevProviderConfiguration.Client(
            clientID: url, clientSecret: nil, redirectURIs: metadata.redirectURIs,
            postLogoutRedirectURIs: metadata.postLogoutRedirectURIs, grantTypes: metadata.grantTypes,
            scopes: metadata.scopes)
    }
}

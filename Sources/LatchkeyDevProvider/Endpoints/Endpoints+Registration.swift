import Foundation
import HTTPTypes
import Hummingbird

extension Endpoints {
    /// Dynamic client registration (RFC 7591 §3), open to anyone: a JSON object of client
    /// metadata in, `201` with the client's id (and secret, unless it asked for
    /// `token_endpoint_auth_method` `none`) and the metadata as registered out. What the
    /// provider cannot honour is refused (§3.2.2): `invalid_redirect_uri` for a redirect URI
    /// that is not absolute, has a fragment, or is plain http off loopback; and
    /// `invalid_client_metadata` for an unknown grant type, scope or authentication method.
    func register(_ request: Request, _ context: ProviderContext) async throws -> Response {
        guard configuration.clientRegistration else { return Reply.json(["error": "not_found"], status: .notFound) }
        let body = try await request.body.collect(upTo: 64 * 1024)
        guard request.headers[.contentType]?.lowercased().hasPrefix("application/json") == true,
            let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
        else { throw Self.invalidMetadata("The request must be a JSON object (application/json).") }
        let metadata = try RegistrationMetadata(object, offering: configuration.offeredScopes)
        let isPublic = metadata.authMethod == "none"
        let client = DevProviderConfiguration.Client(
            clientID: "reg-" + Self.randomText(bytes: 12),
            clientSecret: isPublic ? nil : Self.randomText(bytes: 24),
            redirectURIs: metadata.redirectURIs, postLogoutRedirectURIs: metadata.postLogoutRedirectURIs,
            grantTypes: metadata.grantTypes, scopes: metadata.scopes)
        let managementToken = Self.randomText(bytes: 24)
        state.clients.register(client, managedWith: managementToken)
        var answer = object
        answer["client_id"] = client.clientID
        answer["registration_access_token"] = managementToken
        answer["registration_client_uri"] =
            await issuer(context) + DevProviderEndpoint.registration.path + "/"
            + client.clientID
        answer["client_id_issued_at"] = Int(await state.currentDate.timeIntervalSince1970)
        answer["token_endpoint_auth_method"] = metadata.authMethod
        answer["grant_types"] = metadata.grantTypes
        answer["scope"] = metadata.scopes.joined(separator: " ")
        if let secret = client.clientSecret {
            answer["client_secret"] = secret
            answer["client_secret_expires_at"] = 0
        }
        return Reply.json(answer, status: .created)
    }

    /// A registered client's configuration (RFC 7592 §2.1, `GET`) or its deletion (§2.3,
    /// `DELETE`: `204`, and the client can no longer authenticate), with its registration access
    /// token as a bearer token. A wrong token and an unknown client both answer `401`.
    func manageRegistration(_ request: Request, _ context: ProviderContext) async throws -> Response {
        let id = context.parameters.get("client_id") ?? ""
        guard let client = state.clients.managed(id, token: try bearerToken(request)) else {
            throw OAuthFailure.invalidToken(nil)
        }
        guard request.method == .delete else {
            return Reply.json(
                [
                    "client_id": client.clientID, "redirect_uris": client.redirectURIs,
                    "grant_types": client.grantTypes, "scope": client.scopes.joined(separator: " "),
                    "token_endpoint_auth_method": client.clientSecret == nil ? "none" : "client_secret_basic",
                ], status: .ok)
        }
        state.clients.unregister(id)
        return Response(status: .noContent)
    }

    static func invalidMetadata(_ description: String) -> OAuthFailure {
        OAuthFailure("invalid_client_metadata", description)
    }

    static func randomText(bytes: Int) -> String {
        (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }
}

/// The client metadata of a registration request, checked (RFC 7591 §2), with the defaults
/// §2 gives for what it leaves out.
struct RegistrationMetadata {
    var redirectURIs: [String]
    var postLogoutRedirectURIs: [String]
    var grantTypes: [String]
    var scopes: [String]
    var authMethod: String

    init(_ object: [String: Any], offering offered: [String]) throws {
        func strings(_ key: String) throws -> [String]? {
            guard let value = object[key] else { return nil }
            guard let list = value as? [String] else {
                throw Endpoints.invalidMetadata("\(key) must be an array of strings.")
            }
            return list
        }
        redirectURIs = try strings("redirect_uris") ?? []
        postLogoutRedirectURIs = try strings("post_logout_redirect_uris") ?? []
        grantTypes = try strings("grant_types") ?? ["authorization_code"]
        authMethod = object["token_endpoint_auth_method"] as? String ?? "client_secret_basic"
        if let scope = object["scope"] {
            guard let text = scope as? String else { throw Endpoints.invalidMetadata("scope must be a string.") }
            scopes = text.split(separator: " ").map(String.init)
        } else {
            scopes = DevProviderConfiguration.defaultScopes
        }
        guard ["none", "client_secret_basic", "client_secret_post"].contains(authMethod) else {
            throw Endpoints.invalidMetadata("token_endpoint_auth_method \(authMethod) is not supported.")
        }
        if let unknown = grantTypes.first(where: { !DevProviderConfiguration.allGrantTypes.contains($0) }) {
            throw Endpoints.invalidMetadata("The grant type \(unknown) is not supported.")
        }
        if let unknown = scopes.first(where: { !offered.contains($0) }) {
            throw Endpoints.invalidMetadata("The scope \(unknown) is not offered.")
        }
        if grantTypes.contains("authorization_code"), redirectURIs.isEmpty {
            throw OAuthFailure("invalid_redirect_uri", "The authorization code grant needs redirect_uris.")
        }
        for uri in redirectURIs + postLogoutRedirectURIs {
            guard let url = URL(string: uri), let scheme = url.scheme, url.fragment == nil else {
                throw OAuthFailure("invalid_redirect_uri", "\(uri) is not an absolute URI without a fragment.")
            }
            let loopback = ["127.0.0.1", "localhost", "::1", "[::1]"].contains(url.host ?? "")
            if scheme == "http" && !loopback {
                throw OAuthFailure("invalid_redirect_uri", "\(uri) is plain http off loopback.")
            }
        }
    }
}

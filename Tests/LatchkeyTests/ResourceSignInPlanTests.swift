import Foundation
import Latchkey
import Testing

/// How a sign-in for a resource known by its URL alone is planned: scopes, the code flow's PKCE,
/// the client and its grant types, decided from the two documents without a server.
@Suite("Resource-first sign-in plans")
struct ResourceSignInPlanTests {
    static let resourceURL = URL(string: "https://mcp.example/mcp")!
    static let issuer = URL(string: "https://as.example")!

    static func resource(scopes: [String] = ["tools:read"], challenge: [String]? = nil) -> DiscoveredResource {
        DiscoveredResource(
            metadata: ProtectedResourceMetadata(
                resource: resourceURL, authorizationServers: [issuer], scopesSupported: scopes),
            challenge: challenge.flatMap {
                ResourceChallenge(wwwAuthenticate: ["Bearer scope=\"\($0.joined(separator: " "))\""])
            })
    }

    static func server(
        openID: Bool = true, scopes: [String] = ["openid", "offline_access", "tools:read"], pkce: [String] = ["S256"],
        device: Bool = true, registration: Bool = true, metadataDocuments: Bool = false
    ) -> ProviderMetadata {
        var fields: [String: JSONValue] = [
            "scopes_supported": .array(scopes.map(JSONValue.string)),
            "code_challenge_methods_supported": .array(pkce.map(JSONValue.string)),
        ]
        if openID { fields["id_token_signing_alg_values_supported"] = .array([.string("RS256")]) }
        if metadataDocuments { fields["client_id_metadata_document_supported"] = .bool(true) }
        var endpoints: [EndpointKind: URL] = [.authorization: issuer, .token: issuer]
        if device { endpoints[.deviceAuthorization] = issuer.appendingPathComponent("device") }
        if registration { endpoints[.registration] = issuer.appendingPathComponent("register") }
        return ProviderMetadata(issuer: issuer.absoluteString, endpoints: endpoints, fields: fields)
    }

    @Test(
        "scopes: the challenge's first, else the resource's; openid and offline_access only where the server has them")
    func scopes() throws {
        let plain = try ResourceSignInPlan(
            resource: Self.resource(), server: Self.server(), clientID: nil, method: .device)
        #expect(plain.scopes == ["openid", "offline_access", "tools:read"])
        let challenged = try ResourceSignInPlan(
            resource: Self.resource(challenge: ["tools:write"]), server: Self.server(), clientID: nil, method: .device)
        #expect(challenged.scopes == ["openid", "offline_access", "tools:write"])
        // An OAuth server that is no OpenID provider and offers no offline_access.
        let oauth = try ResourceSignInPlan(
            resource: Self.resource(), server: Self.server(openID: false, scopes: ["tools:read"]), clientID: nil,
            method: .device)
        #expect(oauth.scopes == ["tools:read"])
        // An OpenID provider known by its algorithms alone, whose scope list is silent.
        let silent = try ResourceSignInPlan(
            resource: Self.resource(), server: Self.server(scopes: []), clientID: nil, method: .device)
        #expect(silent.scopes == ["openid", "tools:read"])
        #expect(ResourceSignInPlan.stepUp(granted: ["openid", "a"], asked: ["a", "b", ""]) == ["openid", "a", "b"])
    }

    @Test("the code flow only where the server takes S256; the device grant only where it has the endpoint")
    func methods() throws {
        for pkce in [[], ["plain"]] {
            #expect(throws: ResourceSignInRefusal.self) {
                try ResourceSignInPlan(
                    resource: Self.resource(), server: Self.server(pkce: pkce), clientID: nil, method: .browser)
            }
        }
        let refusal = #expect(throws: ResourceSignInRefusal.self) {
            try ResourceSignInPlan(
                resource: Self.resource(), server: Self.server(device: false), clientID: nil, method: .device)
        }
        #expect(refusal?.code == .noDeviceGrant)
        #expect(
            try ResourceSignInPlan(
                resource: Self.resource(), server: Self.server(pkce: []), clientID: nil, method: .device
            )
            .authorizationServer == Self.issuer)
    }

    @Test("the client: registered for the device grant where the server has one, a named one, or a metadata document")
    func clients() throws {
        let withDevice = try ResourceSignInPlan(
            resource: Self.resource(), server: Self.server(), clientID: nil, method: .browser)
        #expect(
            withDevice.client
                == .register(grantTypes: ["authorization_code", "refresh_token", ResourceSignInPlan.deviceGrantType]))
        let browserOnly = try ResourceSignInPlan(
            resource: Self.resource(), server: Self.server(device: false), clientID: nil, method: .browser)
        #expect(browserOnly.client == .register(grantTypes: ["authorization_code", "refresh_token"]))
        #expect(
            try ResourceSignInPlan(
                resource: Self.resource(), server: Self.server(registration: false), clientID: "cli", method: .browser
            ).client == .named("cli"))
        let document = URL(string: "https://app.example/client.json")!
        #expect(
            try ResourceSignInPlan(
                resource: Self.resource(), server: Self.server(metadataDocuments: true),
                clientID: document.absoluteString, method: .device
            ).client == .metadataDocument(document))
        let refusals: [(ProviderMetadata, String?, ResourceSignInRefusal.Code)] = [
            (Self.server(registration: false), nil, .noRegistration),
            (Self.server(), document.absoluteString, .noMetadataDocuments),
            (Self.server(metadataDocuments: true), "http://app.example/client.json", .invalidClientID),
            (Self.server(metadataDocuments: true), "https://app.example", .invalidClientID),
        ]
        for (server, clientID, code) in refusals {
            let refusal = #expect(throws: ResourceSignInRefusal.self) {
                try ResourceSignInPlan(resource: Self.resource(), server: server, clientID: clientID, method: .browser)
            }
            #expect(refusal?.code == code, "\(String(describing: clientID))")
        }
    }
}

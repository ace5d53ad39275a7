import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// PingAM's REST endpoints for journeys and sessions, on AM's paths:
/// `json/realms/root/realms/REALM/authenticate`, `…/sessions?_action=validate|logout` and
/// `json/serverinfo/*`.
struct JourneyEndpoints: Sendable {
    let journeys: JourneyState
    let faults: DevProviderFaults

    /// `POST authenticate?authIndexType=service&authIndexValue=JOURNEY`: an empty body starts
    /// the journey; a page sent back goes on with it.
    func authenticate(_ request: Request, _ context: ProviderContext) async throws -> Response {
        try Self.requireVersion(request, major: ["2"])
        let query = try Self.query(of: request)
        if let type = try query["authIndexType"], type != "service" {
            throw AMFailure.badRequest("Only authIndexType=service is supported.")
        }
        let body = try await request.body.collect(upTo: 65_536)
        let answer: JourneyState.Answer
        if body.readableBytes == 0 {
            answer = try await journeys.start((try query["authIndexValue"]) ?? "Login")
        } else {
            answer = try await journeys.proceed(try Self.submission(Data(body.readableBytesView)))
        }
        switch answer {
        case .success(let token):
            faults.increment("journey.success")
            let realm = "/" + journeys.realm
            return Reply.json(["tokenId": token, "successUrl": "/enduser/?realm=\(realm)", "realm": realm])
        case .page(let authID, let stage, let header, let callbacks):
            return Reply.json([
                "authId": authID, "stage": stage, "header": header, "description": "",
                "callbacks": callbacks.enumerated().map { index, callback in Self.json(callback, id: index) },
            ])
        }
    }

    /// `GET serverinfo/*`: the session cookie's name, among AM's other public settings.
    func serverInfo(_ request: Request, _ context: ProviderContext) async throws -> Response {
        Reply.json([
            "cookieName": journeys.cookieName, "realm": "/", "lang": "en", "secureCookie": false, "domains": [],
            "forgotPassword": "false", "selfRegistration": "false", "socialImplementations": [],
            "successfulUserRegistrationDestination": "default",
        ])
    }

    /// `POST sessions?_action=validate|logout`, the session in the header named after the cookie.
    func sessions(_ request: Request, _ context: ProviderContext) async throws -> Response {
        let action = try Self.query(of: request)["_action"]
        let header = HTTPField.Name(journeys.cookieName).flatMap { request.headers[$0] }
        switch action {
        case "validate":
            try Self.requireVersion(request, major: ["1", "2", "3", "4"])
            let body = try await request.body.collect(upTo: 65_536)
            let object = (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView))) as? [String: Any]
            let token = (object?["tokenId"] as? String) ?? header
            guard let session = await journeys.session(token) else { return Reply.json(["valid": false]) }
            return Reply.json([
                "valid": true, "sessionUid": session.id, "uid": session.username, "realm": "/" + journeys.realm,
            ])
        case "logout":
            try Self.requireVersion(request, major: ["3"])
            guard await journeys.logout(header) else { throw AMFailure.accessDenied }
            return Reply.json(["result": "Successfully logged out"])
        default:
            throw AMFailure.badRequest("Action '\(action ?? "")' not implemented for this resource")
        }
    }

    /// The query of `request`; a malformed one is refused as AM refuses it.
    private static func query(of request: Request) throws -> Parameters {
        do { return try Parameters(encoded: request.uri.query ?? "") } catch {
            throw AMFailure.badRequest(error.description)
        }
    }

    /// AM refuses a resource version it does not serve.
    private static func requireVersion(_ request: Request, major: Set<String>) throws {
        let header = HTTPField.Name("Accept-API-Version").flatMap { request.headers[$0] } ?? ""
        let parts = header.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard let resource = parts.first(where: { $0.hasPrefix("resource=") }),
            let version = resource.dropFirst("resource=".count).split(separator: ".").first,
            major.contains(String(version))
        else {
            throw AMFailure.badRequest("Unsupported major version: \(header.isEmpty ? "none" : header)")
        }
    }

    /// A page sent back, read strictly: every callback with its type and its inputs.
    private static func submission(_ data: Data) throws -> JourneyState.Submission {
        struct Input: Decodable {
            var name: String
            var value: JourneyState.Value
        }
        struct Callback: Decodable {
            var type: String
            var input: [Input]?
        }
        struct Page: Decodable {
            var authId: String
            var callbacks: [Callback]
        }
        guard let page = try? JSONDecoder().decode(Page.self, from: data) else {
            throw AMFailure.badRequest("The body is not a journey page.")
        }
        return JourneyState.Submission(
            authID: page.authId,
            callbacks: page.callbacks.map { callback in
                (callback.type, Dictionary((callback.input ?? []).map { ($0.name, $0.value) }) { first, _ in first })
            })
    }

    private static func json(_ callback: JourneyState.Callback, id: Int) -> [String: Any] {
        func fields(_ fields: [(name: String, value: JourneyState.Value)]) -> [[String: Any]] {
            fields.map { field in
                let value: Any =
                    switch field.value {
                    case .string(let text): text
                    case .number(let number): number
                    case .strings(let texts): texts
                    case .bool(let flag): flag
                    }
                return ["name": field.name, "value": value]
            }
        }
        var json: [String: Any] = ["type": callback.type, "output": fields(callback.outputs), "_id": id]
        if !callback.inputs.isEmpty { json["input"] = fields(callback.inputs) }
        return json
    }
}

extension JourneyState.Value: Decodable {
    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else if let number = try? container.decode(Int.self) {
            self = .number(number)
        } else if let texts = try? container.decode([String].self) {
            self = .strings(texts)
        } else {
            self = .string(try container.decode(String.self))
        }
    }
}

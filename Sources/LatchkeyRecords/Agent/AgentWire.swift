#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// How agent requests and answers travel on the socket: one JSON object per line, the fields
/// named as the types' `Codable` conformances name them, dates as seconds since 1970. The one
/// definition both sides use — the agent, its NIO client and the quick path's few system calls.
///
/// Written by hand (``JSONText``), not with Foundation's coders: those cost a quick `latchkey`
/// more than its whole conversation with the agent, and the agent a third of an answer. A test
/// holds these lines against the `Codable` forms, which agents and clients of earlier versions
/// write and read.
package enum AgentWire {
    /// The version of the wire this build speaks, sent as `wire` on every line: a new version
    /// changes what a field means, not only which fields there are (fields a side does not
    /// know are passed over). A line without it is version 1, as every earlier build wrote.
    package static let version = 1

    /// `request` as one line, its newline included.
    package static func line(_ request: AgentRequest) -> [UInt8] {
        var fields: [String: JSONValue] = [
            "operation": .string(request.operation.rawValue), "wire": .number(Double(version)),
        ]
        fields["account"] = request.account.map(JSONValue.string)
        fields["resource"] = request.resource.map(JSONValue.string)
        fields["scopes"] = request.scopes.map { .array($0.map(JSONValue.string)) }
        fields["minimumValidity"] = request.minimumValidity.map(JSONValue.number)
        fields["method"] = request.method.map(JSONValue.string)
        fields["url"] = request.url.map(JSONValue.string)
        fields["nonce"] = request.nonce.map(JSONValue.string)
        fields["accessToken"] = request.accessToken.map(JSONValue.string)
        fields["store"] = request.store.map(JSONValue.string)
        return line(fields)
    }

    /// `answer` as one line, its newline included.
    package static func line(_ answer: AgentAnswer) -> [UInt8] {
        var fields: [String: JSONValue] = ["wire": .number(Double(version))]
        fields["failure"] = answer.failure.map { .string($0.rawValue) }
        fields["message"] = answer.message.map(JSONValue.string)
        fields["account"] = answer.account.map(JSONValue.string)
        fields["issuer"] = answer.issuer.map(JSONValue.string)
        fields["token"] = answer.token.map(JSONValue.string)
        fields["tokenType"] = answer.tokenType.map(JSONValue.string)
        fields["expiresAt"] = answer.expiresAt.map { .number($0.timeIntervalSince1970) }
        fields["scopes"] = answer.scopes.map { .array($0.map(JSONValue.string)) }
        fields["authorization"] = answer.authorization.map(JSONValue.string)
        fields["proof"] = answer.proof.map(JSONValue.string)
        fields["claims"] = answer.claims.map(JSONValue.object)
        fields["resources"] = answer.resources.map { .array($0.map(JSONValue.string)) }
        return line(fields)
    }

    private static func line(_ fields: [String: JSONValue]) -> [UInt8] {
        Array((JSONText.text(.object(fields)) + "\n").utf8)
    }

    /// The wire version a line (without its newline) says it speaks — 1 when it says none —
    /// and the request it holds, `nil` when it holds none this version reads (see ``Fields``);
    /// `nil` for a line that is not a JSON object, or gives its version in another form.
    package static func versionedRequest(from line: some Collection<UInt8>) -> (version: Int, request: AgentRequest?)? {
        guard let fields = Fields(line), let version = fields.number("wire") else { return nil }
        let number = version ?? 1
        guard number >= 1, number <= 1e6, number == number.rounded() else { return nil }
        return (Int(number), request(from: fields))
    }

    /// The request a line (without its newline) holds, or `nil` (see ``Fields``).
    package static func request(from line: some Collection<UInt8>) -> AgentRequest? {
        Fields(line).flatMap(request(from:))
    }

    private static func request(from fields: Fields) -> AgentRequest? {
        guard let operation = fields.string("operation").flatMap({ $0 }),
            let operation = AgentRequest.Operation(rawValue: operation)
        else { return nil }
        var request = AgentRequest(operation)
        guard let account = fields.string("account"), let resource = fields.string("resource"),
            let scopes = fields.strings("scopes"), let validity = fields.number("minimumValidity"),
            let method = fields.string("method"), let url = fields.string("url"), let nonce = fields.string("nonce"),
            let accessToken = fields.string("accessToken"), let store = fields.string("store")
        else { return nil }
        (request.account, request.resource, request.scopes, request.minimumValidity) = (
            account, resource, scopes, validity
        )
        (request.method, request.url, request.nonce, request.accessToken, request.store) =
            (method, url, nonce, accessToken, store)
        return request
    }

    /// The answer a line (without its newline) holds, or `nil` (see ``Fields``): a failure this
    /// version does not know is `nil` too.
    package static func answer(from line: some Collection<UInt8>) -> AgentAnswer? {
        guard let fields = Fields(line), let failure = fields.string("failure") else { return nil }
        var answer = AgentAnswer()
        if let failure {
            guard let known = AgentAnswer.Failure(rawValue: failure) else { return nil }
            answer.failure = known
        }
        guard let message = fields.string("message"), let account = fields.string("account"),
            let issuer = fields.string("issuer"), let token = fields.string("token"),
            let tokenType = fields.string("tokenType"), let expiresAt = fields.number("expiresAt"),
            let scopes = fields.strings("scopes"), let authorization = fields.string("authorization"),
            let proof = fields.string("proof"), let claims = fields.object("claims"),
            let resources = fields.strings("resources")
        else { return nil }
        (answer.message, answer.account, answer.issuer, answer.token) = (message, account, issuer, token)
        (answer.tokenType, answer.scopes, answer.authorization, answer.proof) = (
            tokenType, scopes, authorization, proof
        )
        (answer.expiresAt, answer.claims, answer.resources) = (
            expiresAt.map(Date.init(timeIntervalSince1970:)), claims, resources
        )
        return answer
    }

    /// A line's object, read as the decoder reads it: `nil` when the line is not one JSON
    /// object; each field read as `.some(nil)` when it is absent or `null`, and `nil` (the
    /// whole line refused) when it is of another type. Fields this version does not know are
    /// passed over.
    private struct Fields {
        let all: [String: JSONValue]

        init?(_ line: some Collection<UInt8>) {
            guard case .object(let all)? = JSONText.value(line) else { return nil }
            self.all = all
        }

        private func field<T>(_ key: String, _ read: (JSONValue) -> T?) -> T?? {
            guard let value = all[key], value != .null else { return .some(nil) }
            return read(value).map { .some($0) }
        }

        func string(_ key: String) -> String?? { field(key, \.stringValue) }

        func number(_ key: String) -> Double?? {
            field(key) { if case .number(let value) = $0 { value } else { nil } }
        }

        func strings(_ key: String) -> [String]?? {
            field(key) { value -> [String]? in
                guard case .array(let items) = value else { return nil }
                let strings = items.compactMap(\.stringValue)
                return strings.count == items.count ? strings : nil
            }
        }

        func object(_ key: String) -> [String: JSONValue]?? {
            field(key) { if case .object(let value) = $0 { value } else { nil } }
        }
    }
}

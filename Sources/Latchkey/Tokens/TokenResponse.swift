public import Foundation

/// A successful token response (RFC 6749 §5.1, OpenID Connect Core §3.1.3.3).
///
/// `expires_in` is accepted as a number or as a string holding one, because providers send both;
/// `scope` as a string or an array of strings. Only `access_token` and `token_type` are required:
/// an optional field that cannot be read (an `expires_in` of `"3600s"` or `-1`, an `id_token`
/// that is a number) is treated as absent and named in ``ignoredFields``, so that an odd field
/// never throws away the tokens the answer does carry (a rotated refresh token among them).
/// Fields this type does not model are kept in ``additionalFields``.
public struct TokenResponse: Sendable, Hashable {
    /// `access_token`.
    public var accessToken: String
    /// `token_type`.
    public var tokenType: String
    /// `expires_in`, in seconds.
    public var expiresIn: TimeInterval?
    /// `refresh_token`.
    public var refreshToken: String?
    /// `scope`.
    public var scope: String?
    /// `id_token`.
    public var idToken: String?
    /// `device_secret` (OpenID Connect Native SSO).
    public var deviceSecret: String?
    /// Every other field of the response, as it came.
    public var additionalFields: [String: JSONValue]
    /// The optional fields that were present but could not be read, treated as absent.
    public var ignoredFields: [String] = []

    /// Decodes a token response from the JSON body of a token endpoint's answer.
    ///
    /// - Throws: ``TokenResponseError`` when the body is not a JSON object or a required field
    ///   is missing or of the wrong type. The error never quotes the body.
    public init(decoding body: some DataProtocol) throws(TokenResponseError) {
        let fields: [String: JSONValue]
        do {
            fields = try JSONDecoder().decode([String: JSONValue].self, from: Data(body))
        } catch {
            throw .notJSONObject
        }
        try self.init(fields: fields)
    }

    /// Builds a token response from the fields of a decoded JSON object.
    public init(fields: [String: JSONValue]) throws(TokenResponseError) {
        var rest = fields
        func take(_ name: String) -> JSONValue? {
            guard let value = rest.removeValue(forKey: name), value != .null else { return nil }
            return value
        }
        func string(_ name: String) throws(TokenResponseError) -> String? {
            guard let value = take(name) else { return nil }
            guard let string = value.stringValue else { throw .invalidField(name) }
            return string
        }
        var ignored: [String] = []
        /// An optional string: absent when it is not one.
        func optional(_ name: String) -> String? {
            guard let value = take(name) else { return nil }
            guard let string = value.stringValue, !string.isEmpty else {
                ignored.append(name)
                return nil
            }
            return string
        }
        guard let accessToken = try string("access_token"), !accessToken.isEmpty else {
            throw .missingField("access_token")
        }
        guard Self.isB64Token(accessToken) else { throw .notB64Token("access_token") }
        guard let tokenType = try string("token_type"), !tokenType.isEmpty else {
            throw .missingField("token_type")
        }
        self.accessToken = accessToken
        self.tokenType = tokenType
        if let value = take("expires_in") {
            if let seconds = value.doubleValue, seconds.isFinite, seconds >= 0 {
                expiresIn = seconds
            } else {
                ignored.append("expires_in")
            }
        }
        refreshToken = optional("refresh_token")
        if case .array(let values)? = rest["scope"] {
            let scopes = values.compactMap(\.stringValue)
            rest["scope"] = nil
            if scopes.count == values.count { scope = scopes.joined(separator: " ") } else { ignored.append("scope") }
        } else {
            scope = optional("scope")
        }
        idToken = optional("id_token")
        deviceSecret = optional("device_secret")
        ignoredFields = ignored
        additionalFields = rest
    }
}

extension TokenResponse {
    /// Whether `token` has RFC 6750's `b64token` syntax (§2.1), the only text a bearer or DPoP
    /// `Authorization` header may carry: `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" )
    /// *"="`. A token with a space, a control character (CR, LF, ESC, NUL) or any other byte
    /// would be handed on into headers, environment variables and terminals, so a provider's
    /// answer holding one is refused.
    static func isB64Token(_ token: String) -> Bool { Token68.matches(token) }
}

extension TokenResponse: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Names the fields present, never their values.
    public var description: String {
        var present = ["access_token"]
        if refreshToken != nil { present.append("refresh_token") }
        if idToken != nil { present.append("id_token") }
        if deviceSecret != nil { present.append("device_secret") }
        present += additionalFields.keys.sorted()
        return "TokenResponse(token_type: \(tokenType), fields: [\(present.joined(separator: ", "))])"
    }

    /// Same as `description`.
    public var debugDescription: String { description }

    /// A mirror without token values.
    public var customMirror: Mirror { Mirror(self, children: ["summary": description]) }
}

/// Why a token response could not be read.
public struct TokenResponseError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case notJSONObject
        case missingField(String)
        case invalidField(String)
        case notB64Token(String)
    }

    private let code: Code

    /// The body is not a JSON object.
    public static let notJSONObject = TokenResponseError(code: .notJSONObject)
    /// A required field is absent or empty.
    public static func missingField(_ name: String) -> TokenResponseError { .init(code: .missingField(name)) }
    /// A field has the wrong type or an impossible value.
    public static func invalidField(_ name: String) -> TokenResponseError { .init(code: .invalidField(name)) }
    /// A token holds characters RFC 6750's `b64token` syntax does not allow (a space, a control
    /// character such as CR, LF, ESC or NUL, or any other byte outside it).
    public static func notB64Token(_ name: String) -> TokenResponseError { .init(code: .notB64Token(name)) }

    public var description: String {
        switch code {
        case .notJSONObject: return "The token response is not a JSON object."
        case .missingField(let name): return "The token response has no \(name)."
        case .invalidField(let name): return "The token response's \(name) has the wrong type or value."
        case .notB64Token(let name):
            return "The token response's \(name) holds characters a token may not hold (RFC 6750's b64token syntax)."
        }
    }
}

extension Token {
    /// Creates a token from a decoded token response, received at `issuedAt`.
    public init(response: TokenResponse, issuedAt: Date, provider: ProviderIdentity) {
        self.init(
            accessToken: response.accessToken,
            tokenType: response.tokenType,
            refreshToken: response.refreshToken,
            idToken: response.idToken,
            deviceSecret: response.deviceSecret,
            scopes: response.scope.map(Token.scopes(from:)),
            issuedAt: issuedAt,
            expiresAt: response.expiresIn.map { issuedAt.addingTimeInterval(ProviderNumbers.seconds($0, fallback: 0)) },
            provider: provider,
            additionalFields: response.additionalFields
        )
    }
}

// libFuzzer target for Latchkey's decoders of untrusted input: the token response (RFC 6749
// §5.1), a stored token, the claims of a compact JWS, and the agent's lines (a forwarded
// socket reads what a remote host sends). Built by scripts/fuzz with -sanitize=fuzzer,address.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let data = Data(bytes: start, count: count)
    // Token responses: must either decode or throw a typed error, never crash.
    if let response = try? TokenResponse(decoding: data) {
        _ = response.description
        _ = Token(
            response: response, issuedAt: Date(), provider: ProviderIdentity(issuer: "https://i.example", clientID: "c")
        )
    }
    // A stored token (what a seal opens to), with its DPoP key and resource tokens: decoded or
    // refused, never a crash, and never a key that does not match its thumbprint.
    if let token = try? JSONDecoder().decode(Token.self, from: data) {
        _ = token.description
        if let binding = token.dpop, let key = binding.key { precondition(key.thumbprint == binding.thumbprint) }
    }
    // JWT claims: the same bytes as a compact JWS, and as its payload.
    let text = String(decoding: data, as: UTF8.self)
    _ = UnverifiedClaims.read(text)
    let payload = data.base64EncodedString().replacingOccurrences(of: "=", with: "")
    _ = UnverifiedClaims.read("eyJhbGciOiJSUzI1NiJ9.\(payload).c2ln")
    if let claims = UnverifiedClaims.read("eyJhbGciOiJSUzI1NiJ9.\(payload).c2ln") {
        _ = claims.values.map(\.description)
    }
    // The agent's lines: read or refused, and what is read is written back as what reads the same.
    if let request = AgentWire.request(from: data) {
        _ = request.description
        precondition(AgentWire.request(from: AgentWire.line(request).dropLast()) == request)
    }
    if let answer = AgentWire.answer(from: data) {
        _ = answer.description
        precondition(AgentWire.answer(from: AgentWire.line(answer).dropLast()) == answer)
    }
    return 0
}

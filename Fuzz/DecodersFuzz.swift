// libFuzzer target for Latchkey's decoders of untrusted input: the token response (RFC 6749
// §5.1) and the claims of a compact JWS. Built by scripts/fuzz with -sanitize=fuzzer,address.
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
    // JWT claims: the same bytes as a compact JWS, and as its payload.
    let text = String(decoding: data, as: UTF8.self)
    _ = UnverifiedClaims.read(text)
    let payload = data.base64EncodedString().replacingOccurrences(of: "=", with: "")
    _ = UnverifiedClaims.read("eyJhbGciOiJSUzI1NiJ9.\(payload).c2ln")
    if let claims = UnverifiedClaims.read("eyJhbGciOiJSUzI1NiJ9.\(payload).c2ln") {
        _ = claims.values.map(\.description)
    }
    return 0
}

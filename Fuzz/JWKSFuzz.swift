// libFuzzer target for jwt-kit's side of ID-token verification: a provider's JWKS decoded, and
// every key in it built, from its public half, for each algorithm an ID token may name (what
// Latchkey's verifier does with a fetched key set), and a compact JWS parsed. Built by
// scripts/fuzz against the objects of the debug build; jwt-kit and swift-crypto are not
// coverage-instrumented, so this finds crashes (traps, force unwraps, bad preconditions) rather
// than exploring their branches.
import Foundation

@testable import JWTKit

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let data = Data(bytes: start, count: count)
    let algorithms: [JWK.Algorithm?] = [nil, .rs256, .rs384, .ps256, .es256, .es384]
    var keys = (try? JSONDecoder().decode(JWKS.self, from: data))?.keys ?? []
    if let jwk = try? JSONDecoder().decode(JWK.self, from: data) { keys.append(jwk) }
    for var jwk in keys {
        // As Latchkey's verifier does: only the public half of a published key is read.
        (jwk.privateExponent, jwk.prime1, jwk.prime2) = (nil, nil, nil)
        for algorithm in algorithms { _ = try? jwk.getKey(for: algorithm) }
    }
    // The bytes as a compact JWS, header and payload read by jwt-kit's parser.
    let text = String(decoding: data, as: UTF8.self)
    _ = try? DefaultJWTParser().parse(Array(text.utf8), as: Payload.self)
    return 0
}

/// Any claims: the parser's job here is to take the token apart without crashing.
struct Payload: JWTPayload {
    init(from decoder: any Decoder) throws {}
    func encode(to encoder: any Encoder) throws {}
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

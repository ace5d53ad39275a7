import Foundation
import HTTPTypes
import Hummingbird

/// DPoP (RFC 9449) at the token endpoint and userinfo.
extension Endpoints {
    static let dpopCheck = DPoPCheck()

    /// The thumbprint of the key of the request's DPoP proof, or `nil` when it has none.
    /// A proof that fails a check, or lacks the current nonce, is refused as `refusal` says.
    func proofThumbprint(
        _ request: Request, _ context: ProviderContext, endpoint: DevProviderEndpoint, accessToken: String? = nil,
        refusal: (DPoPRefusal) -> OAuthFailure
    ) async throws -> String? {
        let proofs = request.headers[values: Self.dpopField]
        guard !proofs.isEmpty else { return nil }
        do throws(DPoPRefusal) {
            guard proofs.count == 1 else { throw DPoPRefusal("The request carries more than one DPoP proof.") }
            let url = await issuer(context) + endpoint.path
            let proof = try Self.dpopCheck.verify(
                proofs[0], method: request.method.rawValue, url: url, accessToken: accessToken,
                now: await state.currentDate)
            return try await state.accept(proof, window: Self.dpopCheck.window)
        } catch {
            faults.increment("dpop.refused")
            throw refusal(error)
        }
    }

    /// The access token of the request and the key it must be proved with: `Authorization:
    /// DPoP` with a proof for a bound token (RFC 9449 §7.1), `Bearer` for an unbound one.
    func provenAccessToken(_ request: Request, _ context: ProviderContext, endpoint: DevProviderEndpoint)
        async throws -> String
    {
        let header = request.headers[.authorization] ?? ""
        guard header.lowercased().hasPrefix("dpop ") else {
            let token = try bearerToken(request)
            if await state.binding(of: token) != nil {
                throw OAuthFailure.invalidToken("The access token is bound to a DPoP key; send it as DPoP.")
            }
            return token
        }
        let token = String(header.dropFirst(5)).trimmingCharacters(in: .whitespaces)
        let proved = try await proofThumbprint(
            request, context, endpoint: endpoint, accessToken: token, refusal: \.atResource)
        guard let proved else {
            throw DPoPRefusal("A DPoP access token needs a DPoP proof.").atResource
        }
        guard await state.binding(of: token) == proved else {
            throw OAuthFailure.invalidToken("The access token is not bound to the proof's key.")
        }
        return token
    }

    /// `response` with the nonce the next proof must carry, when nonces are required.
    func withDPoPNonce(_ response: Response) async -> Response {
        guard let nonce = await state.currentDPoPNonce else { return response }
        var response = response
        response.headers[Self.dpopNonceField] = nonce
        return response
    }

    // Valid field names (RFC 9110 §5.1 tokens): neither unwrap can fail.
    static let dpopField = HTTPField.Name("DPoP")!
    static let dpopNonceField = HTTPField.Name("DPoP-Nonce")!
}

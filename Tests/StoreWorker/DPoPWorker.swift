import Foundation
import HTTPTypes
import Latchkey
import LatchkeyHTTP
import LatchkeySQLite
import NIOConcurrencyHelpers

/// One process of the multi-process DPoP test: a bound credential in a shared SQLite store,
/// refreshed once (whichever process gets there first) and asked for userinfo many times, with
/// every token-endpoint answer and nonce challenge counted on the wire.
enum DPoPWorker {
    /// Counts what the provider answered.
    final class CountingTransport: HTTPTransport {
        let inner: any HTTPTransport
        let counts = NIOLockedValueBox((refreshes: 0, challenges: 0))

        init(inner: any HTTPTransport) { self.inner = inner }

        func send(_ request: HTTPRequest, body: Data?, options: HTTPTransportOptions) async throws(TransportError)
            -> HTTPTransportResponse
        {
            let answer = try await inner.send(request, body: body, options: options)
            let text = String(decoding: answer.body, as: UTF8.self)
            let challenge =
                text.contains("use_dpop_nonce")
                || (answer.response.headerFields[.wwwAuthenticate] ?? "").contains("use_dpop_nonce")
            let refresh =
                request.path?.hasSuffix("/token") == true && answer.response.status.code == 200
                && String(decoding: body ?? Data(), as: UTF8.self).contains("grant_type=refresh_token")
            counts.withLockedValue {
                if challenge { $0.challenges += 1 }
                if refresh { $0.refreshes += 1 }
            }
            return answer
        }
    }

    static func run(_ arguments: [String]) async throws {
        guard arguments.count == 6, let issuer = URL(string: arguments[1]), let calls = Int(arguments[5]) else {
            fail("usage: latchkey-store-worker dpop PATH ISSUER CLIENT SECRET ID CALLS")
        }
        let store = try await CredentialStore.sqlite(at: arguments[0])
        let transport = CountingTransport(inner: AsyncHTTPClientTransport.shared)
        let provider = OpenIDProvider(
            configuration: OpenIDProviderConfiguration(
                issuer: issuer, clientID: arguments[2], authentication: .basic(secret: arguments[3]), dpop: .required),
            transport: transport)
        let credential = await provider.credential(CredentialID(rawValue: arguments[4]), in: store)
        var failed = 0
        var nonceFailures = 0
        var most = 0
        func call(_ body: () async throws -> Void) async {
            let before = transport.counts.withLockedValue { $0.challenges }
            do {
                try await body()
            } catch {
                failed += 1
                if (error as? ProviderError)?.oauthError == .useDPoPNonce { nonceFailures += 1 }
                FileHandle.standardError.write(Data("call failed: \(error)\n".utf8))
            }
            most = max(most, transport.counts.withLockedValue { $0.challenges } - before)
        }
        await call { _ = try await credential.accessToken() }
        for _ in 0..<calls { await call { _ = try await credential.userInfo() } }
        let refreshes = transport.counts.withLockedValue { $0.refreshes }
        say(
            "refreshes \(refreshes) calls \(calls + 1) failed \(failed) nonce-failures \(nonceFailures) most-challenges \(most)"
        )
    }
}

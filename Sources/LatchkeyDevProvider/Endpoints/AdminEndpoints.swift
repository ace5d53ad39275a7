import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// `/admin/…`: fault injection, counters and key rotation over HTTP, for tests in other
/// processes. Answers callers on loopback only, and is never subject to faults or offline.
///
/// - `GET /admin/counters`, `DELETE /admin/counters`
/// - `PUT /admin/faults/{endpoint|all}` with a ``DevProviderFault`` as JSON;
///   `DELETE /admin/faults/{endpoint}`; `DELETE /admin/faults` (clears every fault and offline)
/// - `PUT /admin/offline` with `{"offline": true|false}`
/// - `POST /admin/rotate-keys`
struct AdminEndpoints: Sendable {
    let faults: DevProviderFaults
    let rotate: @Sendable () async throws -> Void

    func register(on router: Router<ProviderContext>) {
        let admin = router.group("admin").add(middleware: LoopbackOnly())
        admin.get("counters") { _, _ in Reply.json(faults.counters) }
        admin.delete("counters") { _, _ in
            faults.resetCounters()
            return Reply.json(faults.counters)
        }
        admin.put("faults/:endpoint") { request, context in
            let fault = try await Self.decode(DevProviderFault.self, request)
            let name = context.parameters.get("endpoint") ?? ""
            if name == "all" {
                faults.set(fault)
            } else {
                guard let endpoint = DevProviderEndpoint(rawValue: name) else { return Self.unknown(name) }
                faults.set(fault, for: endpoint)
            }
            return Reply.json(["ok": true])
        }
        admin.delete("faults/:endpoint") { _, context in
            let name = context.parameters.get("endpoint") ?? ""
            guard let endpoint = DevProviderEndpoint(rawValue: name) else { return Self.unknown(name) }
            faults.clear(endpoint)
            return Reply.json(["ok": true])
        }
        admin.delete("faults") { _, _ in
            faults.clear()
            return Reply.json(["ok": true])
        }
        admin.put("offline") { request, _ in
            struct Offline: Decodable { var offline: Bool }
            faults.isOffline = try await Self.decode(Offline.self, request).offline
            return Reply.json(["offline": faults.isOffline])
        }
        admin.post("rotate-keys") { _, _ in
            try await rotate()
            return Reply.json(["ok": true])
        }
    }

    private static func decode<T: Decodable>(_ type: T.Type, _ request: Request) async throws -> T {
        let body = try await request.body.collect(upTo: 65_536)
        do {
            return try JSONDecoder().decode(T.self, from: Data(body.readableBytesView))
        } catch {
            throw OAuthFailure.invalidRequest("The body is not the JSON this admin endpoint takes.")
        }
    }

    private static func unknown(_ name: String) -> Response {
        Reply.json(
            ["error": "unknown_endpoint", "endpoints": DevProviderEndpoint.allCases.map(\.rawValue) + ["all"]],
            status: .notFound)
    }
}

/// Refuses callers that are not on loopback.
struct LoopbackOnly: RouterMiddleware {
    typealias Context = ProviderContext

    func handle(
        _ request: Request, context: ProviderContext, next: (Request, ProviderContext) async throws -> Response
    ) async throws -> Response {
        guard context.isLoopbackPeer else { return Reply.json(["error": "forbidden"], status: .forbidden) }
        return try await next(request, context)
    }
}

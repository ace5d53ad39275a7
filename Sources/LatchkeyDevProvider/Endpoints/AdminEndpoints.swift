import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// `/admin/…`: fault injection, counters and key rotation over HTTP, for tests in other
/// processes. Never subject to faults or offline. Three checks guard it: the caller is on
/// loopback; the `Host` header names loopback or the issuer's host (a web page that reaches the
/// port through DNS rebinding sends its own name); and `Authorization: Bearer ADMIN-TOKEN`
/// carries the run's admin token (a page cannot set that header without a CORS preflight, which
/// is never granted).
///
/// - `GET /admin/counters`, `DELETE /admin/counters`
/// - `PUT /admin/faults/{endpoint|all}` with a ``DevProviderFault`` as JSON;
///   `DELETE /admin/faults/{endpoint}`; `DELETE /admin/faults` (clears every fault and offline)
/// - `PUT /admin/offline` with `{"offline": true|false}`
/// - `POST /admin/rotate-keys`
/// - `POST /admin/users/{username}/sign-out`: ends every session of the user, as an
///   administrator would, sending the back-channel logouts they owe
/// - `PUT /admin/back-channel` with `{"shape": "standard"|"draft06", "fault": null|"replay"|…}`
struct AdminEndpoints: Sendable {
    let faults: DevProviderFaults
    let token: String
    let issuer: @Sendable () async -> String
    let rotate: @Sendable () async throws -> Void
    let signOutUser: @Sendable (String) async -> Int

    func register(on router: Router<ProviderContext>) {
        let admin = router.group("admin").add(middleware: AdminGuard(token: token, issuer: issuer))
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
        admin.post("users/:username/sign-out") { _, context in
            let ended = await signOutUser(context.parameters.get("username") ?? "")
            return Reply.json(["sessions_ended": ended])
        }
        admin.put("back-channel") { request, _ in
            struct Settings: Decodable {
                var shape: DevProviderLogoutTokenShape?
                var fault: DevProviderLogoutTokenFault?
            }
            let settings = try await Self.decode(Settings.self, request)
            if let shape = settings.shape { faults.backChannel.shape = shape }
            faults.backChannel.fault = settings.fault
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

/// Refuses callers that are not on loopback, requests whose `Host` is not loopback or the
/// issuer's host, and requests without the admin token.
struct AdminGuard: RouterMiddleware {
    typealias Context = ProviderContext
    let token: String
    let issuer: @Sendable () async -> String

    func handle(
        _ request: Request, context: ProviderContext, next: (Request, ProviderContext) async throws -> Response
    ) async throws -> Response {
        guard context.isLoopbackPeer else { return Reply.json(["error": "forbidden"], status: .forbidden) }
        guard let host = request.head.authority, await allowed(host: host) else {
            return Reply.json(
                ["error": "forbidden", "error_description": "The Host is not this provider's."], status: .forbidden)
        }
        let presented = request.headers[.authorization].flatMap { header -> String? in
            header.lowercased().hasPrefix("bearer ") ? String(header.dropFirst(7)) : nil
        }
        guard let presented, Self.equal(Array(presented.utf8), Array(token.utf8)) else {
            var response = Reply.json(
                ["error": "invalid_token", "error_description": "The admin endpoints need the run's admin token."],
                status: .unauthorized)
            response.headers[.wwwAuthenticate] = #"Bearer realm="latchkey-dev-admin""#
            return response
        }
        return try await next(request, context)
    }

    /// `localhost`, `127.x.y.z`, `[::1]` or the issuer's host, with any port.
    private func allowed(host: String) async -> Bool {
        let name: Substring
        if host.hasPrefix("[") {
            name = host.prefix { $0 != "]" }.dropFirst()
        } else {
            name = host.prefix { $0 != ":" }
        }
        let lowered = name.lowercased()
        if lowered == "localhost" || lowered == "::1" { return true }
        let parts = lowered.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count == 4, parts[0] == "127", parts.allSatisfy({ UInt8($0) != nil }) { return true }
        return URL(string: await issuer())?.host?.lowercased() == lowered
    }

    /// Compares in time that does not depend on where the two differ.
    static func equal(_ left: [UInt8], _ right: [UInt8]) -> Bool {
        guard left.count == right.count else { return false }
        var difference: UInt8 = 0
        for index in left.indices { difference |= left[index] ^ right[index] }
        return difference == 0
    }
}

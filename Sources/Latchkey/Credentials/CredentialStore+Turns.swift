package import Foundation

extension CredentialStore {
    /// Runs `body` in the turn of the DPoP server at `url` (its origin): the tasks, processes
    /// and instances sharing the storage take turns there, so that a server that moves its
    /// nonce on at every use gets the nonce the one before left, instead of one another spent.
    ///
    /// The turn is a lease of the storage's own (named `dpop-nonce:ORIGIN`, no credential's,
    /// with the store's ``leaseDuration`` and clock): a retry never waits for a refresh, nor a
    /// refresh for a retry, and one turn serves every account calling that server. The
    /// requests `body` sends are answered within the turn's deadline, as a lease holder's are.
    package func nonceTurn<T: Sendable>(at url: URL, _ body: @Sendable () async -> T) async throws(StorageError) -> T {
        let terms = LeaseTerms(duration: leaseDuration, clock: clock)
        return try await storage.withCredentialLease(for: Self.nonceTurnLease(at: url), terms: terms) { _ in
            await RequestDeadline.$current.withValue(RequestDeadline(leaseOf: terms.duration, clock: terms.clock)) {
                await body()
            }
        }
    }

    /// The name of the nonce turn at `url`'s server: its scheme, host and port, lowercased.
    static func nonceTurnLease(at url: URL) -> CredentialID {
        let scheme = url.scheme?.lowercased() ?? ""
        let host = url.host?.lowercased() ?? ""
        let port = url.port.map { ":\($0)" } ?? ""
        return CredentialID(rawValue: "dpop-nonce:\(scheme)://\(host)\(port)")
    }
}

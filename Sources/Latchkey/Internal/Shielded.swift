/// Work that a cancellation must not cut in two: it runs in a task of its own, which the
/// caller's cancellation does not reach (task-local values still do), and the caller waits for
/// it. For the steps of a sign-in between the request that makes the provider issue a grant
/// and the moment that grant is kept or revoked: cut there, the grant would stay alive with
/// nothing holding it.
package enum Shielded {
    /// Runs `body` to its end whatever happens to the caller's task.
    package static func run<Value: Sendable, Failure: Error>(
        _ body: @escaping @Sendable () async throws(Failure) -> Value
    ) async throws(Failure) -> Value {
        let outcome = await Task { () async -> Result<Value, Failure> in
            do throws(Failure) {
                return .success(try await body())
            } catch {
                return .failure(error)
            }
        }.value
        return try outcome.get()
    }
}

public import LatchkeyDevProvider

/// One set of development-provider signing keys for the whole test process.
///
/// Each test starts its own provider; generating an RSA key for each of them kept both cores
/// busy for many seconds at the start of a run, long enough for timing-bound tests to fail.
public enum SharedSigningKeys {
    private static let keys = Task { try DevProviderSigningKeys.generate() }

    /// The shared keys, generated on first use.
    public static func get() async throws -> DevProviderSigningKeys { try await keys.value }
}

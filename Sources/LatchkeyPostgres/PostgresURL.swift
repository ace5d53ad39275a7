import Foundation
public import Latchkey
public import PostgresNIO

extension PostgresCredentialStorage {
    /// A `PostgresClient` configuration from a connection URL:
    /// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=disable|prefer|require]`.
    ///
    /// TLS is preferred unless `sslmode` says otherwise. The password may be percent-encoded;
    /// it never appears in an error.
    public static func clientConfiguration(url text: String) throws(StorageError) -> PostgresClient.Configuration {
        guard let components = URLComponents(string: text), ["postgres", "postgresql"].contains(components.scheme),
            let host = components.host, !host.isEmpty
        else {
            throw StorageError(
                .databaseFailure,
                reason: "The store URL is not a postgres://USER@HOST[:PORT]/DATABASE URL.", retryable: false)
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let tls: PostgresClient.Configuration.TLS
        switch components.queryItems?.first(where: { $0.name == "sslmode" })?.value ?? "prefer" {
        case "disable": tls = .disable
        case "require", "verify-ca", "verify-full": tls = .require(.makeClientConfiguration())
        case "prefer", "allow": tls = .prefer(.makeClientConfiguration())
        case let mode:
            throw StorageError(
                .databaseFailure, reason: "The store URL's sslmode \(mode) is not one Latchkey knows.",
                retryable: false)
        }
        var configuration = PostgresClient.Configuration(
            host: host, port: components.port ?? 5432,
            username: components.percentEncodedUser?.removingPercentEncoding ?? "postgres",
            password: components.percentEncodedPassword?.removingPercentEncoding,
            database: database.isEmpty ? nil : database, tls: tls)
        configuration.options.additionalStartupParameters = [("application_name", "latchkey")]
        return configuration
    }
}

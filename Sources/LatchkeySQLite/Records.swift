import Foundation
import GRDB
import Latchkey
import LatchkeySQLiteReader

/// The rows of the SQLite store, as the backends share them (``SealedCredential``,
/// ``SealedOutboxEntry``): read and written by column name, each row on its own.
extension SealedCredential {
    /// The row's values, in ``columns``' order.
    var arguments: StatementArguments {
        [
            id, subject, username, email, issuer, name, clientID, tags, metadata, sealedToken, createdAt, updatedAt,
            version, accessTokenExpiresAt, hasAccessToken, hasRefreshToken, needsSignIn, rejectedAccessToken,
        ]
    }

    /// A row as stored.
    init(row: Row) throws {
        self.init(
            id: try row.decode(forColumn: "id"), subject: try row.decode(forColumn: "subject"),
            username: try row.decode(forColumn: "username"), email: try row.decode(forColumn: "email"),
            issuer: try row.decode(forColumn: "issuer"), name: try row.decode(forColumn: "name"),
            clientID: try row.decode(forColumn: "client_id"), tags: try row.decode(forColumn: "tags"),
            metadata: try row.decode(forColumn: "metadata"), sealedToken: try row.decode(forColumn: "sealed_token"),
            createdAt: try row.decode(forColumn: "created_at"), updatedAt: try row.decode(forColumn: "updated_at"),
            version: try row.decode(forColumn: "version"),
            accessTokenExpiresAt: try row.decode(forColumn: "access_token_expires_at"),
            hasAccessToken: try row.decode(forColumn: "has_access_token"),
            hasRefreshToken: try row.decode(forColumn: "has_refresh_token"),
            needsSignIn: try row.decode(forColumn: "needs_sign_in"),
            rejectedAccessToken: try row.decode(forColumn: "rejected_access_token"))
    }

    /// What a listing shows of a row that holds ``listedColumns``.
    static func summary(row: Row) throws -> AccountSummary {
        SealedCredential(
            id: try row.decode(forColumn: "id"), subject: try row.decode(forColumn: "subject"),
            username: try row.decode(forColumn: "username"), email: try row.decode(forColumn: "email"),
            issuer: try row.decode(forColumn: "issuer"), name: try row.decode(forColumn: "name"),
            clientID: try row.decode(forColumn: "client_id"), tags: try row.decode(forColumn: "tags"), metadata: "",
            sealedToken: Data(), createdAt: try row.decode(forColumn: "created_at"), updatedAt: 0, version: 0,
            accessTokenExpiresAt: try row.decode(forColumn: "access_token_expires_at"),
            hasAccessToken: try row.decode(forColumn: "has_access_token"),
            hasRefreshToken: try row.decode(forColumn: "has_refresh_token"),
            needsSignIn: try row.decode(forColumn: "needs_sign_in")
        ).summary()
    }
}

extension SealedOutboxEntry {
    /// Every column of an `outbox` row but its claim, in the order ``arguments`` gives them.
    static let columns = [
        "id", "issuer", "client_id", "kind", "account", "sealed_token", "token_expires_at", "created_at", "attempts",
        "next_attempt_at", "last_error", "failure_cause", "failed_permanently", "waits_for",
    ]

    /// The row's values, in ``columns``' order.
    var arguments: StatementArguments {
        [
            id, issuer, clientID, kind, account, sealedToken, tokenExpiresAt, createdAt, attempts, nextAttemptAt,
            lastError, failureCause, failedPermanently, waitsFor,
        ]
    }

    /// A row as stored.
    init(row: Row) throws {
        self.init(
            id: try row.decode(forColumn: "id"), issuer: try row.decode(forColumn: "issuer"),
            clientID: try row.decode(forColumn: "client_id"), kind: try row.decode(forColumn: "kind"),
            account: try row.decode(forColumn: "account"), sealedToken: try row.decode(forColumn: "sealed_token"),
            tokenExpiresAt: try row.decode(forColumn: "token_expires_at"),
            createdAt: try row.decode(forColumn: "created_at"), attempts: try row.decode(forColumn: "attempts"),
            nextAttemptAt: try row.decode(forColumn: "next_attempt_at"),
            lastError: try row.decode(forColumn: "last_error"),
            failureCause: try row.decode(forColumn: "failure_cause"),
            failedPermanently: try row.decode(forColumn: "failed_permanently"),
            waitsFor: try row.decode(forColumn: "waits_for"))
    }
}

extension SealedCredential {
    /// Writes the row over the one with its id (and, when given, `condition`'s further
    /// conditions: `AND version = ?`); the number of rows it changed.
    @discardableResult
    func replace(in db: Database, and condition: String = "", _ arguments: StatementArguments = []) throws -> Int {
        var all = self.arguments
        all += [id]
        all += arguments
        try db.execute(
            sql: "UPDATE credential SET \(SQL.assignments(Self.columns)) WHERE id = ? \(condition)", arguments: all)
        return db.changesCount
    }
}

extension SealedOutboxEntry {
    /// Writes the row over the one with its id (and, when given, `condition`'s further
    /// conditions), leaving its claim as it is.
    func replace(in db: Database, and condition: String = "", _ arguments: StatementArguments = []) throws {
        var all = self.arguments
        all += [id]
        all += arguments
        try db.execute(
            sql: "UPDATE outbox SET \(SQL.assignments(Self.columns)) WHERE id = ? \(condition)", arguments: all)
    }
}

extension CredentialVersionRecord {
    /// The record of a row of ``SealedCredential/selectRecorded``; `nil` when the row has none.
    init?(row: Row) throws {
        guard let version: Int = try row.decode(forColumn: "recorded_version") else { return nil }
        self.init(
            id: try row.decode(forColumn: "id"), version: version,
            deleted: try row.decode(forColumn: "recorded_deleted"), seal: try row.decode(forColumn: "recorded_seal"))
    }

    /// Writes the record over the one of its credential, in the transaction that writes the row.
    func write(in db: Database) throws {
        try db.execute(
            sql: "INSERT OR REPLACE INTO credential_version (id, version, deleted, seal) VALUES (?, ?, ?, ?)",
            arguments: [id, version, deleted, seal])
    }
}

extension Row {
    /// The `id` column as text, for reporting a row that does not decode.
    var idText: String? { self["id"] as String? }
}

/// SQL text helpers for the column lists.
enum SQL {
    /// `a, b, c`.
    static func list(_ columns: [String]) -> String { columns.joined(separator: ", ") }
    /// `?, ?, ?`.
    static func placeholders(_ columns: [String]) -> String { columns.map { _ in "?" }.joined(separator: ", ") }
    /// `a = ?, b = ?`.
    static func assignments(_ columns: [String]) -> String { columns.map { "\($0) = ?" }.joined(separator: ", ") }
}

/// A stored record that cannot be read. Latchkey leaves it as it is and reports it.
public struct DamagedRecord: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of record.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case credential
            case outboxEntry = "outbox-entry"
            case defaultMarker = "default-marker"
        }

        private let base: Base

        /// A credential (an account).
        public static let credential = Kind(base: .credential)
        /// A revocation waiting in the outbox.
        public static let outboxEntry = Kind(base: .outboxEntry)
        /// The marker of the default account.
        public static let defaultMarker = Kind(base: .defaultMarker)

        /// The kind's name.
        public var rawValue: String { base.rawValue }
        public var description: String { base.rawValue }
    }

    /// What kind of record.
    public var kind: Kind
    /// Its identifier: a ``CredentialID`` or an outbox entry's UUID, as text.
    public var id: String
    /// Why it cannot be read (no secret).
    public var reason: String

    /// Creates a report.
    public init(kind: Kind, id: String, reason: String) {
        self.kind = kind
        self.id = id
        self.reason = reason
    }

    public var description: String { "damaged \(kind.rawValue) \(id): \(reason)" }
}

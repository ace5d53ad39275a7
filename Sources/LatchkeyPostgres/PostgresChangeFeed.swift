import Foundation
public import Latchkey
import Logging
import PostgresNIO

/// Changes travel between instances by `NOTIFY` on ``PostgresCredentialStorage/channel``, sent
/// in the transaction of the change (so a change that rolls back is never announced). A
/// notification carries the kind of change, the credential's id and the storage object that
/// made it; never token material.
extension PostgresCredentialStorage {
    /// One notification's payload.
    struct Notification: Codable, Sendable {
        /// The storage object that made the change.
        var origin: String
        /// `added`, `updated`, `removed` or `default`.
        var change: String
        /// The credential; for `default`, the new default (`nil`: cleared).
        var id: String?
    }

    /// Announces `event` to the other instances, in the transaction of `connection`.
    func notify(_ event: CredentialStoreEvent, on connection: PostgresConnection) async throws {
        let payload: Notification
        switch event {
        case .added(let id): payload = Notification(origin: origin, change: "added", id: id.rawValue)
        case .updated(let id): payload = Notification(origin: origin, change: "updated", id: id.rawValue)
        case .removed(let id): payload = Notification(origin: origin, change: "removed", id: id.rawValue)
        case .defaultChanged(let id): payload = Notification(origin: origin, change: "default", id: id?.rawValue)
        case .changesMayHaveBeenMissed: return
        }
        let text = String(decoding: try JSONEncoder().encode(payload), as: UTF8.self)
        // Read to its end: a failure must fail the transaction here, not turn its COMMIT into a
        // silent ROLLBACK (see `advisoryLock(_:on:logger:)`).
        for try await _ in try await connection.query("SELECT pg_notify(\(Self.channel), \(text))", logger: logger) {}
    }

    /// The changes other instances make, over a connection of its own that listens on the
    /// channel. When that connection is lost, the feed connects again (every second until it
    /// can), logs it, and publishes ``CredentialStoreEvent/changesMayHaveBeenMissed``.
    public func changesMadeElsewhere() -> AsyncStream<CredentialStoreEvent> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: CredentialStoreEvent.self, bufferingPolicy: .bufferingNewest(4_096))
        let task = Task { [client, logger, origin] in
            var subscribed = false
            while !Task.isCancelled {
                do {
                    try await client.withConnection { connection in
                        try await connection.listen(on: Self.channel) { notifications in
                            if subscribed {
                                logger.warning("change feed resubscribed; changes made meanwhile were not seen")
                                continuation.yield(.changesMayHaveBeenMissed)
                            }
                            subscribed = true
                            for try await notification in notifications {
                                guard
                                    let payload = try? JSONDecoder().decode(
                                        Notification.self, from: Data(notification.payload.utf8)),
                                    payload.origin != origin, let event = Self.event(payload)
                                else { continue }
                                continuation.yield(event)
                            }
                        }
                    }
                } catch {
                    if Task.isCancelled { break }
                    logger.warning("change feed lost; connecting again", metadata: ["error": "\(error)"])
                }
                try? await Task.sleep(for: .seconds(1))
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    static func event(_ payload: Notification) -> CredentialStoreEvent? {
        let id = payload.id.map(CredentialID.init(rawValue:))
        switch (payload.change, id) {
        case ("added", let id?): return .added(id)
        case ("updated", let id?): return .updated(id)
        case ("removed", let id?): return .removed(id)
        case ("default", _): return .defaultChanged(id)
        default: return nil
        }
    }
}

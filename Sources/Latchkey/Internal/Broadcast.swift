import Foundation
import NIOConcurrencyHelpers

/// Hands every value it is given to every current subscriber, each through its own
/// `AsyncStream`. A subscriber that stops listening is forgotten; one that falls more than
/// ``bufferSize`` values behind loses the oldest of them and is told so with `missed`.
final class Broadcast<Element: Sendable>: Sendable {
    /// The most values a subscriber may fall behind.
    static var bufferSize: Int { 1_024 }

    private let subscribers = NIOLockedValueBox<[UUID: AsyncStream<Element>.Continuation]>([:])
    /// What a subscriber that lost values is sent before the next value it gets.
    private let missed: Element?

    /// A broadcast; `missed` is announced to a subscriber that lost values.
    init(missed: Element? = nil) {
        self.missed = missed
    }

    /// A new stream that receives every value sent from now on.
    func subscribe() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream<Element>.makeStream(
            bufferingPolicy: .bufferingNewest(Self.bufferSize))
        let id = UUID()
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLockedValue { $0.removeValue(forKey: id) }
        }
        subscribers.withLockedValue { $0[id] = continuation }
        return stream
    }

    /// Sends `element` to every subscriber.
    func send(_ element: Element) {
        for continuation in subscribers.withLockedValue({ Array($0.values) }) {
            // A full buffer drops its oldest value: the subscriber is told right behind the newest
            // one, where the notice is the last thing to be dropped.
            if case .dropped = continuation.yield(element), let missed { continuation.yield(missed) }
        }
    }

    deinit {
        for continuation in subscribers.withLockedValue({ Array($0.values) }) {
            continuation.finish()
        }
    }
}

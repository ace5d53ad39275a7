import Foundation
import Synchronization

/// Hands every value it is given to every current subscriber, each through its own
/// `AsyncStream`. A subscriber that stops listening is forgotten.
final class Broadcast<Element: Sendable>: Sendable {
    private let subscribers = Mutex<[UUID: AsyncStream<Element>.Continuation]>([:])

    /// A new stream that receives every value sent from now on.
    func subscribe() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream<Element>.makeStream(bufferingPolicy: .bufferingNewest(1024))
        let id = UUID()
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.removeValue(forKey: id) }
        }
        subscribers.withLock { $0[id] = continuation }
        return stream
    }

    /// Sends `element` to every subscriber.
    func send(_ element: Element) {
        for continuation in subscribers.withLock({ Array($0.values) }) {
            continuation.yield(element)
        }
    }

    deinit {
        for continuation in subscribers.withLock({ Array($0.values) }) {
            continuation.finish()
        }
    }
}

import NIOCore

/// Runs the agent's tasks on the one event loop that serves its sockets, so that an answer
/// (a line read, a token looked up, a line written) stays on one thread: without it each
/// request crosses from the loop to the concurrency pool and back, and each crossing is a
/// thread wake-up that costs more than the rest of a valid-token answer.
///
/// Nothing that waits runs here: the store's reads and writes run on its own queue, the
/// terminal confirmation on NIO's thread pool, and every network call is asynchronous. The one
/// synchronous write is the use log's line, appended to a local file.
final class EventLoopTaskExecutor: TaskExecutor {
    private let loop: any EventLoop

    init(_ loop: any EventLoop) { self.loop = loop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A port nothing listens on at the moment, for servers whose URL must be known before they
/// start (a redirect URI a provider registers, say).
///
/// Ports come from below the kernel's ephemeral range (32768–60999 on Linux), which `bind` to
/// port 0 never hands out, and none is handed out twice in one test process: a port picked by
/// binding port 0 and closing it could go to the next server that binds port 0 (a development
/// provider of a test running beside), and the server meant for it would then fail to start.
public enum FreePort {
    private static let handedOut = NIOLockedValueBox<Set<Int>>([])

    /// A port in 20000–32767 that this process has not handed out, free when it was checked.
    public static func pick() async throws -> Int {
        for _ in 0..<200 {
            let port = Int.random(in: 20000...32767)
            guard handedOut.withLockedValue({ $0.insert(port).inserted }) else { continue }
            guard
                let channel = try? await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .bind(host: "127.0.0.1", port: port).get()
            else { continue }
            try await channel.close()
            return port
        }
        throw IOError(errnoCode: EADDRINUSE, reason: "no free port in 20000–32767")
    }
}

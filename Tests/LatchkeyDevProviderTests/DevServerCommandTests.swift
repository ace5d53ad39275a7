import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// `latchkey dev-server`, run as the built binary.
@Suite("latchkey dev-server")
struct DevServerCommandTests {
    static var binary: URL {
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        while url.pathComponents.count > 1 {
            url.deleteLastPathComponent()
            let candidate = url.appendingPathComponent("latchkey")
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDirectory), !isDirectory.boolValue
            {
                return candidate
            }
        }
        return URL(fileURLWithPath: ".build/debug/latchkey")
    }

    @Test("prints the issuer URL as its first line, serves discovery, and exits 0 on SIGINT")
    func standalone() async throws {
        let process = Process()
        let output = Pipe()
        process.executableURL = Self.binary
        process.arguments = ["dev-server", "--port", "0"]
        process.standardOutput = output
        try process.run()
        let handle = output.fileHandleForReading
        let firstLine: String = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var bytes = Data()
                while true {
                    let chunk = handle.readData(ofLength: 1)
                    if chunk.isEmpty || chunk == Data("\n".utf8) { break }
                    bytes.append(chunk)
                }
                continuation.resume(returning: String(decoding: bytes, as: UTF8.self))
            }
        }
        #expect(firstLine.hasPrefix("http://127.0.0.1:"))
        let discovery = try await Client.fetchJSON(firstLine + "/.well-known/openid-configuration")
        #expect(discovery["issuer"] as? String == firstLine)

        let exited: Int32 = await withCheckedContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            kill(process.processIdentifier, SIGINT)
        }
        #expect(exited == 0)
    }

    @Test("a configuration file that cannot be read is a usage error")
    func badConfig() async throws {
        let process = Process()
        process.executableURL = Self.binary
        process.arguments = ["dev-server", "--config", "/nonexistent/config.json"]
        process.standardError = Pipe()
        try process.run()
        let status: Int32 = await withCheckedContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
        }
        #expect(status == 2)
    }
}

extension Client {
    static func fetchJSON(_ url: String) async throws -> [String: Any] {
        let request = HTTPClientRequest(url: url)
        let response = try await http.execute(request, timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]) ?? [:]
    }
}

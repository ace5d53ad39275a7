import AsyncHTTPClient
import Foundation
import LatchkeyTestSupport
import NIOCore
import NIOHTTP1
import Testing

/// `latchkey dev-server`, run as the built binary.
@Suite("latchkey dev-server")
struct DevServerCommandTests {
    @Test("prints the issuer URL as its first line, serves discovery, and exits 0 on SIGINT")
    func standalone() async throws {
        let server = try await ChildProcess.start(Executables.latchkey, ["dev-server", "--port", "0"], input: "")
        let output = try await server.standardOutput { $0.contains("\n") }
        let firstLine = String(output.prefix { $0 != "\n" })
        #expect(firstLine.hasPrefix("http://127.0.0.1:"))
        let discovery = try await Client.fetchJSON(firstLine + "/.well-known/openid-configuration")
        #expect(discovery["issuer"] as? String == firstLine)

        server.send(signal: SIGINT)
        #expect(try await server.finish().status == 0)
    }

    @Test("a configuration file that cannot be read is a usage error")
    func badConfig() async throws {
        let result = try await ChildProcess.run(
            Executables.latchkey, ["dev-server", "--config", "/nonexistent/config.json"], input: "")
        #expect(result.status == 2)
        #expect(result.stderr.contains("/nonexistent/config.json"))
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

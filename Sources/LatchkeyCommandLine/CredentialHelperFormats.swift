package import LatchkeyRecords

/// What git writes to a credential helper: `key=value` lines up to a blank line or the end
/// (git-credential(1), "INPUT/OUTPUT FORMAT").
package struct GitCredentialRequest: Sendable {
    package var fields: [String: String] = [:]

    package init() {}

    package var `protocol`: String? { fields["protocol"] }
    package var host: String? { fields["host"] }
    package var password: String? { fields["password"] }

    /// The host without a port (`host` may carry one: `example.com:8443`).
    package var hostName: String {
        guard let host else { return "" }
        if host.hasPrefix("["), let end = host.firstIndex(of: "]") { return String(host[...end]) }
        return host.split(separator: ":", maxSplits: 1).first.map(String.init) ?? host
    }

    /// The most git sends a helper: its own requests are a few short lines.
    package static let limit = 64 * 1024

    /// Reads the request from standard input — `key=value` lines up to a blank line or the end —
    /// refusing one longer than ``limit`` bytes before reading more (it never holds more in memory).
    package static func read() throws(CLIError) -> GitCredentialRequest {
        try parse(readBytes())
    }

    /// What git wrote to standard input, up to a blank line or the end.
    package static func readBytes() throws(CLIError) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        reading: while true {
            let count = buffer.withUnsafeMutableBytes { readStandardInput(into: $0) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += buffer[0..<count]
            guard bytes.count <= limit else {
                throw CLIError.input("git's request is longer than \(limit) bytes; git never sends one that long.")
            }
            // A blank line ends the request.
            if bytes.count >= 2, bytes.suffix(2) == [10, 10] { break reading }
            if bytes == [10] { break reading }
        }
        return bytes
    }

    /// The request in `bytes` (as ``readBytes()`` read them).
    package static func parse(_ bytes: [UInt8]) -> GitCredentialRequest {
        var request = GitCredentialRequest()
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false) {
            if line.isEmpty { break }
            guard let equals = line.firstIndex(of: "=") else { continue }
            request.fields[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return request
    }

}

/// Reads what standard input has, up to `buffer`'s size: read(2).
private func readStandardInput(into buffer: UnsafeMutableRawBufferPointer) -> Int {
    read(STDIN_FILENO, buffer.baseAddress, buffer.count)
}

extension GitCredentialRequest {
    /// git's answer to `get` (git-credential(1)): the account's username (else its email, else
    /// `oauth2`) and the token as the password, with its expiry when known; `nil` when a value
    /// holds a line break or a NUL, which would add lines of its own to git's input (a username
    /// carrying `url=…` or `quit=1`).
    package static func answer(for metadata: CredentialMetadata, password: String, expiry: Date?) -> String? {
        var answer = ["username=\(metadata.preferredUsername ?? metadata.email ?? "oauth2")", "password=\(password)"]
        if let expiry { answer.append("password_expiry_utc=\(CLINumbers.epochSeconds(expiry))") }
        guard !answer.contains(where: { $0.contains("\n") || $0.contains("\r") || $0.contains("\0") }) else {
            return nil
        }
        return answer.joined(separator: "\n") + "\n"
    }
}

/// What a kubectl exec credential plugin prints (client.authentication.k8s.io).
package struct ExecCredential: Encodable {
    package var apiVersion: String
    package var kind = "ExecCredential"
    package var status: [String: String]

    package init(apiVersion: String, token: String, expiry: Date?) {
        self.apiVersion = apiVersion
        status = ["token": token]
        if let expiry { status["expirationTimestamp"] = expiry.formatted(.iso8601) }
    }

    /// The document and a newline, keys sorted.
    package var json: Data {
        get throws {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return try encoder.encode(self) + Data("\n".utf8)
        }
    }

    /// The API version kubectl says it speaks in `$KUBERNETES_EXEC_INFO`, else v1.
    package static func apiVersion(execInfo: String?) -> String {
        struct ExecInfo: Decodable { var apiVersion: String? }
        let info = execInfo.flatMap { try? JSONDecoder().decode(ExecInfo.self, from: Data($0.utf8)) }
        return info?.apiVersion ?? "client.authentication.k8s.io/v1"
    }
}

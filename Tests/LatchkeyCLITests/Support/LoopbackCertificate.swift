import Foundation
import LatchkeyTestSupport
import NIOSSL

/// A self-signed certificate for 127.0.0.1, made by Debian's openssl: a loopback server's
/// identity, and the one authority its test clients trust (kubectl's `certificate-authority`,
/// `SSL_CERT_FILE` for a Python peer).
struct LoopbackCertificate {
    /// The certificate, PEM: also the authority a client is given.
    let certificatePath: String
    let keyPath: String

    /// Makes a key and its certificate in `folder`, as `name.crt` and `name.key`.
    static func make(in folder: TemporaryFolder, named name: String) async throws -> LoopbackCertificate {
        let certificate = LoopbackCertificate(
            certificatePath: folder.file("\(name).crt"), keyPath: folder.file("\(name).key"))
        let made = try await ChildProcess.run(
            URL(fileURLWithPath: "/usr/bin/openssl"),
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
                certificate.keyPath, "-out", certificate.certificatePath, "-days", "1", "-subj", "/CN=127.0.0.1",
                "-addext", "subjectAltName=IP:127.0.0.1",
            ], input: "")
        guard made.status == 0 else { throw TestFailure("openssl could not make a certificate: \(made.stderr)") }
        return certificate
    }

    /// What a loopback server presents.
    func serverConfiguration() throws -> TLSConfiguration {
        TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(certificatePath).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: keyPath, format: .pem)))
    }
}

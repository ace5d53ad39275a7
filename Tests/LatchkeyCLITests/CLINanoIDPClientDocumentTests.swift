import Foundation
import LatchkeyTestSupport
import Testing

/// A client id that is a metadata document's https URL, at nanoidp: it fetches the document
/// over TLS (from an allowed host, trusting the test's certificate alone) and takes that client
/// for a browser sign-in, but, by its own rule, never at its device endpoint: a device code
/// outlives the cached document that describes the client.
extension CLINanoIDPTests {
    /// A document listing the device grant too, as the README says to publish, served over TLS,
    /// and a nanoidp that fetches it.
    static func startWithDocument() async throws -> (Setup, ClientDocumentPublisher, TemporaryFolder) {
        let folder = try TemporaryFolder()
        let certificate = try await LoopbackCertificate.make(in: folder, named: "documents")
        let publisher = try await ClientDocumentPublisher.start(
            grantTypes: ["authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:device_code"],
            certificate: certificate)
        let setup = try await Setup.start(
            documents: NanoIDP.DocumentHost(host: publisher.host, authority: certificate.certificatePath))
        return (setup, publisher, folder)
    }

    @Test(
        "login --resource URL --client-id https://… --browser --paste: nanoidp fetches the document over TLS, no client is registered, the MCP server takes the token"
    )
    func pastedWithDocument() async throws {
        let (setup, publisher, folder) = try await Self.startWithDocument()
        let finished = try await setup.pasteSignIn(["--client-id", publisher.clientID])
        #expect(finished.status == 0, "\(finished.stderr)")
        #expect(try CLILoginTests.documents(finished.stdout).last??["account"] as? String == "alice")
        #expect(publisher.fetched == 1, "nanoidp fetched the document once")
        let audit = try await setup.nano.audit()
        #expect(!audit.contains { $0.event == "client_registered" }, "no client was registered")
        let providers = try await setup.device.run("provider", "list", "--json")
        #expect(providers.array.first?["clientId"] as? String == publisher.clientID)

        // nanoidp gives a document's client no refresh token: the MCP server gets the sign-in's
        // access token, which was asked for it alone.
        let report = try await PythonMCPClient.run(device: setup.device, endpoint: setup.server.endpoint, calls: 1)
        #expect(report.errors.isEmpty, "\(report.errors) \(report.stderr)")
        #expect(report.whoami == "alice")
        await publisher.stop()
        await setup.stop()
        folder.cleanUp()
    }

    @Test(
        "login --resource URL --device --client-id https://… where nanoidp takes a document's client for the browser only: its invalid_client shown with the way that works, nothing signed in"
    )
    func deviceWithDocumentRefused() async throws {
        let (setup, publisher, folder) = try await Self.startWithDocument()
        let login = try await setup.device.run(
            "--json", "login", "--resource", setup.resource, "--device", "--client-id", publisher.clientID)
        #expect(login.status == 1, "\(login.stderr)")
        #expect(login.stderr.contains("invalid_client"), "the provider's answer, named: \(login.stderr)")
        #expect(login.stderr.contains("--browser --paste"), "the way that works here: \(login.stderr)")
        #expect(try CLILoginTests.documents(login.stdout).allSatisfy { $0?["action"] == nil }, "no code to enter")
        #expect(try await setup.nano.tokenRequests("urn:ietf:params:oauth:grant-type:device_code") == 0)
        #expect(try await setup.device.run("token", "--resource", setup.resource).status != 0, "nothing signed in")
        await publisher.stop()
        await setup.stop()
        folder.cleanUp()
    }
}

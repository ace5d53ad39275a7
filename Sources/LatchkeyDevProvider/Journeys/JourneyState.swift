import Crypto
import Foundation
import HTTPTypes

/// The journeys the provider serves, and the SSO sessions they end in: its own small take on
/// PingAM's `authenticate` and `sessions` endpoints. The sessions are AM's, not the OAuth
/// ones: ending one revokes no token, as in AM.
actor JourneyState {
    /// A value of a callback's output or input.
    enum Value: Sendable, Equatable {
        case string(String)
        case number(Int)
        case strings([String])
        case bool(Bool)
    }

    /// One callback of a page, as sent.
    struct Callback: Sendable {
        var type: String
        var outputs: [(name: String, value: Value)]
        var inputs: [(name: String, value: Value)]
    }

    /// A page sent back: its `authId` and its callbacks' types and inputs, in order.
    struct Submission: Sendable {
        var authID: String
        var callbacks: [(type: String, inputs: [String: Value])]
    }

    /// What a step of a journey answers.
    enum Answer: Sendable {
        case page(authID: String, stage: String, header: String, callbacks: [Callback])
        case success(token: String)
    }

    /// An SSO session.
    struct Session: Sendable {
        var id: String
        var username: String
        var authTime: Date
        var ended = false
    }

    /// A journey under way: which page it is on, and what it has learnt.
    private struct Flow {
        var journey: Journey
        var page: Int
        var sent: [Callback]
        var username: String?
        var hiddenValue: String
        var expiresAt: Date
    }

    /// The journeys, by the name `authIndexValue` gives.
    enum Journey: String, CaseIterable, Sendable {
        /// One page: a name and a password.
        case login = "Login"
        /// Two pages: a welcome text and a name; then a password, a choice with a default and a
        /// hidden value the client must send back as it came.
        case steppedLogin = "SteppedLogin"
    }

    /// The session header's (and cookie's) name.
    let cookieName: String
    /// The realm the journeys and sessions are in.
    let realm: String
    private let configuration: DevProviderConfiguration
    private let now: @Sendable () -> Date
    private var flows: [String: Flow] = [:]  // authId → flow
    private var sessions: [String: Session] = [:]  // token → session

    init(configuration: DevProviderConfiguration, now: @escaping @Sendable () -> Date) {
        self.configuration = configuration
        self.now = now
        realm = configuration.realm
        cookieName = configuration.sessionCookieName ?? Self.randomCookieName()
    }

    /// A name like Advanced Identity Cloud's: fifteen hex digits, new each run.
    static func randomCookieName() -> String {
        let bytes = SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) }
        return String(bytes.map { String(format: "%02x", $0) }.joined().prefix(15))
    }

    // MARK: Journeys

    /// The first page of `name`.
    func start(_ name: String) throws -> Answer {
        guard let journey = Journey(rawValue: name) else { throw AMFailure.badRequest("No configuration found") }
        var flow = Flow(
            journey: journey, page: 0, sent: [], hiddenValue: ProviderState.randomToken(bytes: 12),
            expiresAt: now().addingTimeInterval(300))
        return send(&flow)
    }

    /// The next step after `submission`: the next page, the session, or a failure.
    func proceed(_ submission: Submission) throws -> Answer {
        guard var flow = flows.removeValue(forKey: submission.authID), flow.expiresAt > now() else {
            throw AMFailure.signInFailed
        }
        guard submission.callbacks.map(\.type) == flow.sent.map(\.type) else {
            throw AMFailure.badRequest("The callbacks sent back are not the page's.")
        }
        var inputs: [String: Value] = [:]
        for callback in submission.callbacks { inputs.merge(callback.inputs) { first, _ in first } }
        func text(_ name: String) -> String? {
            if case .string(let value)? = inputs[name] { return value }
            return nil
        }
        switch (flow.journey, flow.page) {
        case (.login, _):
            return try signIn(username: text("IDToken1"), password: text("IDToken2"))
        case (.steppedLogin, 0):
            guard let username = text("IDToken2"), !username.isEmpty else { throw AMFailure.signInFailed }
            flow.username = username
            flow.page = 1
            return send(&flow)
        default:
            guard text("IDToken3") == flow.hiddenValue else {
                throw AMFailure(.unauthorized, "Login failure: the hidden value did not come back as sent")
            }
            switch inputs["IDToken2"] {
            case .number(0)?, .number(1)?: break
            default: throw AMFailure.badRequest("The choice is not one of the choices.")
            }
            return try signIn(username: flow.username, password: text("IDToken1"))
        }
    }

    private func signIn(username: String?, password: String?) throws -> Answer {
        guard let username, let user = configuration.user(named: username), user.password == password else {
            throw AMFailure.signInFailed
        }
        let token = ProviderState.randomToken(bytes: 32) + ".*"
        sessions[token] = Session(id: ProviderState.randomToken(bytes: 12), username: user.username, authTime: now())
        return .success(token: token)
    }

    /// Records `flow` under a new `authId` (each is good for one answer) and returns its page.
    private func send(_ flow: inout Flow) -> Answer {
        let (stage, header, callbacks) = Self.page(flow.journey, flow.page, hiddenValue: flow.hiddenValue)
        flow.sent = callbacks
        let authID = ProviderState.randomToken(bytes: 24)
        flows[authID] = flow
        return .page(authID: authID, stage: stage, header: header, callbacks: callbacks)
    }

    private static func page(_ journey: Journey, _ page: Int, hiddenValue: String) -> (String, String, [Callback]) {
        switch (journey, page) {
        case (.login, _):
            return ("Login", "Sign In", [name("IDToken1"), password("IDToken2")])
        case (.steppedLogin, 0):
            return (
                "Welcome", "Welcome",
                [
                    Callback(
                        type: "TextOutputCallback",
                        outputs: [
                            ("message", .string("Welcome to the Latchkey development provider. Two pages to go.")),
                            ("messageType", .string("0")),
                        ], inputs: []),
                    name("IDToken2"),
                ]
            )
        default:
            return (
                "Verify", "Verify it is you",
                [
                    password("IDToken1"),
                    Callback(
                        type: "ChoiceCallback",
                        outputs: [
                            ("prompt", .string("Stay signed in on this device?")),
                            ("choices", .strings(["No", "Yes"])),
                            ("defaultChoice", .number(1)),
                        ], inputs: [("IDToken2", .number(1))]),
                    Callback(
                        type: "HiddenValueCallback",
                        outputs: [("value", .string(hiddenValue)), ("id", .string("journeyCheck"))],
                        inputs: [("IDToken3", .string("journeyCheck"))]),
                ]
            )
        }
    }

    private static func name(_ input: String) -> Callback {
        Callback(type: "NameCallback", outputs: [("prompt", .string("User Name"))], inputs: [(input, .string(""))])
    }

    private static func password(_ input: String) -> Callback {
        Callback(type: "PasswordCallback", outputs: [("prompt", .string("Password"))], inputs: [(input, .string(""))])
    }

    // MARK: Sessions

    /// The live session `token` names.
    func session(_ token: String?) -> Session? {
        guard let token, let session = sessions[token], !session.ended else { return nil }
        return session
    }

    /// Ends the session `token` names; `false` when there is no live one.
    @discardableResult
    func logout(_ token: String?) -> Bool {
        guard let token, session(token) != nil else { return false }
        sessions[token]?.ended = true
        return true
    }

    /// Ends the session whose id is `id` (the OIDC session that came from it ended).
    func end(id: String) {
        for (token, session) in sessions where session.id == id { sessions[token]?.ended = true }
    }

    /// How many sessions of `username` are live.
    func liveSessions(of username: String) -> Int {
        sessions.values.filter { $0.username == username && !$0.ended }.count
    }

    /// Ends every session of `username` (a global sign-out).
    func endAll(username: String) {
        for (token, session) in sessions where session.username == username { sessions[token]?.ended = true }
    }
}

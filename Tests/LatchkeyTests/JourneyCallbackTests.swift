import Foundation
import Latchkey
import Testing

/// Journey pages as AM's documentation shows them: every callback type read, an unknown one
/// kept whole, and what goes back to AM.
@Suite("Journey callbacks")
struct JourneyCallbackTests {
    /// A page with one callback of each type Latchkey reads, and one it does not.
    static let page = #"""
        {"authId": "eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9.state.signature", "stage": "Everything", "header": "Sign in",
         "description": "All at once",
         "callbacks": [
          {"type": "NameCallback", "output": [{"name": "prompt", "value": "User Name"}],
           "input": [{"name": "IDToken1", "value": ""}], "_id": 0},
          {"type": "PasswordCallback", "output": [{"name": "prompt", "value": "Password"}],
           "input": [{"name": "IDToken2", "value": ""}], "_id": 1},
          {"type": "TextOutputCallback", "output": [{"name": "message", "value": "Hello"}, {"name": "messageType", "value": "1"}]},
          {"type": "ChoiceCallback", "output": [{"name": "prompt", "value": "Pick"}, {"name": "choices", "value": ["a", "b", "c"]},
           {"name": "defaultChoice", "value": 2}], "input": [{"name": "IDToken4", "value": 2}]},
          {"type": "ConfirmationCallback", "output": [{"name": "prompt", "value": ""}, {"name": "messageType", "value": 0},
           {"name": "options", "value": ["Yes", "No"]}, {"name": "optionType", "value": -1}, {"name": "defaultOption", "value": 1}],
           "input": [{"name": "IDToken5", "value": 0}]},
          {"type": "TextInputCallback", "output": [{"name": "prompt", "value": "Nickname"}, {"name": "defaultText", "value": "ali"}],
           "input": [{"name": "IDToken6", "value": ""}]},
          {"type": "HiddenValueCallback", "output": [{"name": "value", "value": "v-123"}, {"name": "id", "value": "deviceCheck"}],
           "input": [{"name": "IDToken7", "value": "deviceCheck"}]},
          {"type": "BooleanAttributeInputCallback", "output": [{"name": "name", "value": "preferences/marketing"},
           {"name": "prompt", "value": "Send me offers"}, {"name": "required", "value": true}, {"name": "policies", "value": {}},
           {"name": "failedPolicies", "value": []}, {"name": "validateOnly", "value": false}, {"name": "value", "value": false}],
           "input": [{"name": "IDToken8", "value": false}, {"name": "IDToken8validateOnly", "value": false}]},
          {"type": "TermsAndConditionsCallback", "output": [{"name": "version", "value": "0.0"}, {"name": "terms", "value": "Be nice."},
           {"name": "createDate", "value": "2026-01-01T00:00:00Z"}], "input": [{"name": "IDToken9", "value": false}]},
          {"type": "PollingWaitCallback", "output": [{"name": "waitTime", "value": "8000"}, {"name": "message", "value": "Waiting"}]},
          {"type": "MetadataCallback", "output": [{"name": "data", "value": {"stage": "x"}}]},
          {"type": "DeviceProfileCallback", "output": [{"name": "metadata", "value": true}, {"name": "message", "value": "Collecting"}],
           "input": [{"name": "IDToken12", "value": ""}], "_id": 11}
         ]}
        """#

    static func read() throws -> JourneyPage {
        let fields = try JSONDecoder().decode([String: JSONValue].self, from: Data(page.utf8))
        return try #require(JourneyPage(json: fields))
    }

    @Test("every callback type the guide names is read, with its outputs")
    func kinds() throws {
        let page = try Self.read()
        #expect(page.stage == "Everything" && page.header == "Sign in" && page.text == "All at once")
        let kinds = page.callbacks.map(\.kind)
        #expect(kinds[0] == .name(prompt: "User Name"))
        #expect(kinds[1] == .password(prompt: "Password"))
        #expect(kinds[2] == .textOutput(message: "Hello", messageType: 1))
        #expect(kinds[3] == .choice(prompt: "Pick", choices: ["a", "b", "c"], defaultChoice: 2))
        #expect(kinds[4] == .confirmation(prompt: "", options: ["Yes", "No"], defaultOption: 1))
        #expect(kinds[5] == .textInput(prompt: "Nickname", defaultText: "ali"))
        #expect(kinds[6] == .hiddenValue(id: "deviceCheck", value: "v-123"))
        #expect(
            kinds[7]
                == .booleanAttribute(
                    attribute: "preferences/marketing", prompt: "Send me offers", required: true, value: false))
        #expect(kinds[8] == .termsAndConditions(version: "0.0", terms: "Be nice.", createDate: "2026-01-01T00:00:00Z"))
        #expect(kinds[9] == .pollingWait(wait: .milliseconds(8_000), message: "Waiting"))
        #expect(kinds[10] == .metadata(.object(["stage": .string("x")])))
        #expect(kinds[11] == .other)
        #expect(page.callbacks[11].type == "DeviceProfileCallback")
    }

    @Test("defaults: what a callback takes when nobody answers, and what only a person can answer")
    func defaults() throws {
        let page = try Self.read()
        let defaults = page.callbacks.map(\.defaultAnswer)
        #expect(defaults[0] == nil && defaults[1] == nil, "a name and a password have none")
        #expect(defaults[3] == .number(2) && defaults[4] == .number(1))
        #expect(defaults[5] == .string("ali") && defaults[6] == .string("v-123") && defaults[7] == .bool(false))
        #expect(defaults[8] == nil, "terms are accepted by a person")
        #expect(defaults[11] == nil, "an unknown callback's empty input has no default")
        #expect(
            page.unanswered.map(\.type) == [
                "NameCallback", "PasswordCallback", "TermsAndConditionsCallback", "DeviceProfileCallback",
            ])
    }

    @Test("the page goes back whole: an unknown callback is never dropped, and its input can be filled")
    func answered() throws {
        var page = try Self.read()
        page.callbacks[0].setText("alice")
        page.callbacks[1].setText("secret-password")
        page.callbacks[3].select(0)
        page.callbacks[8].setBool(true)
        let filled = page.callbacks[11].setValue(.string("{\"platform\":\"linux\"}"))
        let unchanged = page.callbacks[2].setText("nothing to set")
        #expect(filled)
        #expect(unchanged == false, "a text output has no input")
        let sent = page.answered
        #expect(sent["authId"] == .string("eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9.state.signature"))
        guard case .array(let callbacks)? = sent["callbacks"] else {
            Issue.record("no callbacks sent")
            return
        }
        #expect(callbacks.count == 12)
        guard case .object(let unknown) = callbacks[11], case .array(let inputs)? = unknown["input"] else {
            Issue.record("the unknown callback was not sent back")
            return
        }
        #expect(unknown["type"] == .string("DeviceProfileCallback"))
        #expect(unknown["_id"] == .number(11))
        #expect(unknown["output"] != nil)
        #expect(inputs == [.object(["name": .string("IDToken12"), "value": .string("{\"platform\":\"linux\"}")])])
        guard case .object(let password) = callbacks[1], case .array(let passwordInputs)? = password["input"] else {
            Issue.record("the password was not sent back")
            return
        }
        #expect(passwordInputs == [.object(["name": .string("IDToken2"), "value": .string("secret-password")])])
        // Read again, the answered page is the same page.
        let again = try #require(JourneyPage(json: sent))
        #expect(again.callbacks[0].inputs.first?.value == .string("alice"))
    }

    @Test("a page's description and dump show no answer and no authId")
    func secrets() throws {
        var page = try Self.read()
        page.callbacks[1].setText("secret-password")
        var dumped = ""
        dump(page, to: &dumped)
        for text in ["\(page)", String(reflecting: page), dumped, "\(page.callbacks[1])"] {
            #expect(!text.contains("secret-password"))
            #expect(!text.contains("state.signature"))
        }
        let session = JourneySession(value: "AQIC5-session-token-value", successURL: "/enduser", realm: "/alpha")
        var dumpedSession = ""
        dump(session, to: &dumpedSession)
        for text in ["\(session)", String(reflecting: session), dumpedSession] {
            #expect(!text.contains("AQIC5-session-token-value"))
        }
    }

    @Test("what is not a page is refused: no authId, a callback without a type, inputs without names")
    func malformed() throws {
        for text in [
            #"{"callbacks": []}"#,
            #"{"authId": "x", "callbacks": [{"output": []}]}"#,
            #"{"authId": "x", "callbacks": [{"type": "NameCallback", "input": [{"value": ""}]}]}"#,
            #"{"authId": "x", "callbacks": {"type": "NameCallback"}}"#,
        ] {
            let fields = try JSONDecoder().decode([String: JSONValue].self, from: Data(text.utf8))
            #expect(JourneyPage(json: fields) == nil, "\(text)")
        }
    }

    @Test("realm paths and URLs as AM spells them")
    func realmPaths() throws {
        let server = try #require(URL(string: "https://am.example.com/am/"))
        func configuration(_ realm: String) -> PingJourneyConfiguration {
            PingJourneyConfiguration(serverURL: server, realm: realm, clientID: "app")
        }
        #expect(configuration("alpha").realmPath == "realms/root/realms/alpha")
        #expect(configuration("/customers/europe").realmPath == "realms/root/realms/customers/realms/europe")
        #expect(configuration("root").realmPath == "realms/root")
        #expect(configuration("/").realmPath == "realms/root")
        #expect(
            configuration("alpha").issuer.absoluteString == "https://am.example.com/am/oauth2/realms/root/realms/alpha")
        #expect(
            configuration("alpha").authenticateURL.absoluteString
                == "https://am.example.com/am/json/realms/root/realms/alpha/authenticate")
        #expect(configuration("alpha").serverInfoURL.absoluteString == "https://am.example.com/am/json/serverinfo/*")
        #expect(configuration("alpha").redirectURI.absoluteString == "http://127.0.0.1/callback")
    }
}

/// Where a journey stands after a step: another page to answer, or the signed-in session.
/// A refusal (a wrong password, say) is thrown as a ``ProviderError`` whose
/// ``ProviderError/underlying`` is AM's ``PingError``.
public enum JourneyStep: Sendable {
    /// A page of callbacks: answer them and send it with ``PingJourneyProvider/next(_:)``.
    case page(JourneyPage)
    /// The journey ended signed in.
    case success(JourneySession)

    /// The session the journey ended in, or `nil` while it asks for a page.
    public var session: JourneySession? {
        if case .success(let session) = self { session } else { nil }
    }

    /// The page the journey asks to fill in, or `nil` once it ended.
    public var page: JourneyPage? {
        if case .page(let page) = self { page } else { nil }
    }
}

/// One page of a journey: its callbacks, to answer and send back whole.
///
/// `description` and a `dump` name the callbacks, never an input's value or the page's `authId`.
public struct JourneyPage: Sendable, Hashable {
    /// The callbacks, in AM's order. Answer them in place, then send the page.
    public var callbacks: [JourneyCallback]
    /// The page's `header`, when AM sent one.
    public var header: String? { json["header"]?.stringValue }
    /// The page's `description` text, when AM sent one.
    public var text: String? { json["description"]?.stringValue }
    /// The page's `stage`, when the journey names its pages.
    public var stage: String? { json["stage"]?.stringValue }
    /// The page as AM sent it (with its `authId`); its callbacks are replaced when sent back.
    let json: [String: JSONValue]

    /// Reads a page; `nil` when the answer is not one (no `authId`, or a callback that is not).
    package init?(json: [String: JSONValue]) {
        guard json["authId"]?.stringValue != nil else { return nil }
        var callbacks: [JourneyCallback] = []
        if case .array(let items)? = json["callbacks"] {
            for item in items {
                guard let callback = JourneyCallback(json: item) else { return nil }
                callbacks.append(callback)
            }
        } else if json["callbacks"] != nil {
            return nil
        }
        self.callbacks = callbacks
        self.json = json
    }

    /// The page as it goes back to AM: everything it came with, and the answered callbacks.
    package var answered: [String: JSONValue] {
        var json = json
        json["callbacks"] = .array(callbacks.map(\.answered))
        return json
    }

    /// The callbacks that need an answer nobody gave: inputs as AM sent them, and no default
    /// (a name, a password, terms to accept, an unknown callback with an empty input).
    public var unanswered: [JourneyCallback] {
        callbacks.filter { !$0.inputs.isEmpty && !$0.isAnswered && $0.defaultAnswer == nil }
    }
}

extension JourneyPage: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The stage and the callbacks, never an input's value or the `authId`.
    public var description: String {
        "JourneyPage(\(stage.map { "stage: \($0), " } ?? "")callbacks: \(callbacks.map(\.description).joined(separator: ", ")))"
    }

    /// Same as `description`.
    public var debugDescription: String { description }

    /// A mirror without the `authId` or any input's value.
    public var customMirror: Mirror {
        Mirror(
            self, children: ["stage": stage as Any, "header": header as Any, "callbacks": callbacks],
            displayStyle: .struct)
    }
}

/// A journey's success: the SSO session token, and where AM would send the user.
///
/// `description` and a `dump` never show the session token.
public struct JourneySession: Sendable, Hashable {
    /// The session token (AM's `tokenId`): a credential, kept sealed like the OAuth tokens.
    public let value: String
    /// AM's `successUrl`, e.g. `/enduser/?realm=/alpha`.
    public let successURL: String?
    /// The realm signed in to, e.g. `/alpha`.
    public let realm: String?

    /// Creates a session from AM's success answer.
    public init(value: String, successURL: String? = nil, realm: String? = nil) {
        self.value = value
        self.successURL = successURL
        self.realm = realm
    }
}

extension JourneySession: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The realm and success URL, never the token.
    public var description: String {
        "JourneySession(realm: \(realm ?? "?"), successUrl: \(successURL ?? "?"))"
    }

    /// Same as `description`.
    public var debugDescription: String { description }

    /// A mirror without the token.
    public var customMirror: Mirror {
        Mirror(self, children: ["realm": realm as Any, "successURL": successURL as Any], displayStyle: .struct)
    }
}

/// What AM says of a session (`sessions?_action=validate`).
public struct SessionValidity: Sendable, Hashable {
    /// Whether the session is valid.
    public var isValid: Bool
    /// The user's id (`uid`), when valid.
    public var userID: String?
    /// The session's realm, when valid.
    public var realm: String?

    /// Creates a validity.
    public init(isValid: Bool, userID: String? = nil, realm: String? = nil) {
        self.isValid = isValid
        self.userID = userID
        self.realm = realm
    }
}

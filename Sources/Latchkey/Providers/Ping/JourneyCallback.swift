/// One callback of a journey page: what AM shows or asks for, and the answer to send back.
///
/// Every callback keeps the JSON AM sent, whatever its type, so a page goes back whole: a
/// callback Latchkey does not know (``Kind-swift.enum/other``) is never dropped, and its inputs
/// can be filled like any other's. ``kind-swift.property`` reads the known types.
///
/// Neither `description` nor a `dump` shows an input's value (a password, say).
public struct JourneyCallback: Sendable, Hashable {
    /// One named value of a callback's `output` or `input`.
    public struct Field: Sendable, Hashable {
        /// The field's name (`prompt`, `IDToken1`, …).
        public var name: String
        /// Its value.
        public var value: JSONValue

        /// Creates a field.
        public init(name: String, value: JSONValue) {
            self.name = name
            self.value = value
        }
    }

    /// What a callback is, read from its type and outputs.
    public enum Kind: Sendable, Hashable {
        /// `NameCallback`: a username.
        case name(prompt: String)
        /// `PasswordCallback`: a password, never shown.
        case password(prompt: String)
        /// `TextInputCallback`: free text, maybe with a default.
        case textInput(prompt: String, defaultText: String?)
        /// `TextOutputCallback`: a message to show (`messageType` 0 information, 1 warning, 2 error;
        /// 4 is a script, which a client without a browser cannot run).
        case textOutput(message: String, messageType: Int)
        /// `ChoiceCallback`: one of `choices`, by index.
        case choice(prompt: String, choices: [String], defaultChoice: Int?)
        /// `ConfirmationCallback`: one of `options`, by index.
        case confirmation(prompt: String, options: [String], defaultOption: Int?)
        /// `HiddenValueCallback`: a value the client sends back unseen (its output `value`).
        case hiddenValue(id: String, value: String)
        /// `BooleanAttributeInputCallback`: a yes or no for a profile attribute.
        case booleanAttribute(attribute: String, prompt: String, required: Bool, value: Bool)
        /// `TermsAndConditionsCallback`: terms the user accepts.
        case termsAndConditions(version: String, terms: String, createDate: String?)
        /// `PollingWaitCallback`: wait this long, then send the page again.
        case pollingWait(wait: Duration, message: String)
        /// `MetadataCallback`: data for the client, nothing to answer.
        case metadata(JSONValue)
        /// A type Latchkey does not model: see ``JourneyCallback/type``, ``outputs`` and ``inputs``.
        case other
    }

    /// AM's name for the type, e.g. `NameCallback`.
    public let type: String
    /// The callback's outputs, in AM's order.
    public let outputs: [Field]
    /// The callback's inputs, in AM's order; set their values to answer.
    public private(set) var inputs: [Field]
    /// The inputs as AM sent them.
    let sentInputs: [Field]
    /// The callback as AM sent it; its `input` is replaced by ``inputs`` when sent back.
    let json: [String: JSONValue]

    /// Reads a callback from AM's JSON; `nil` when it is not a callback.
    package init?(json value: JSONValue) {
        guard case .object(let json) = value, let type = json["type"]?.stringValue,
            let outputs = Self.fields(json["output"]), let inputs = Self.fields(json["input"])
        else { return nil }
        self.type = type
        self.outputs = outputs
        self.inputs = inputs
        self.sentInputs = inputs
        self.json = json
    }

    /// Whether an input was set since AM sent the callback.
    public var isAnswered: Bool { inputs != sentInputs }

    private static func fields(_ value: JSONValue?) -> [Field]? {
        guard let value else { return [] }
        guard case .array(let items) = value else { return nil }
        var fields: [Field] = []
        for item in items {
            guard case .object(let object) = item, let name = object["name"]?.stringValue else { return nil }
            fields.append(Field(name: name, value: object["value"] ?? .null))
        }
        return fields
    }

    /// The callback as it goes back to AM, with its inputs' values.
    package var answered: JSONValue {
        var json = json
        if !inputs.isEmpty {
            json["input"] = .array(inputs.map { .object(["name": .string($0.name), "value": $0.value]) })
        }
        return .object(json)
    }

    /// The output named `name`.
    public func output(_ name: String) -> JSONValue? {
        outputs.first { $0.name == name }?.value
    }

    /// The callback's `prompt` output, when it has one.
    public var prompt: String? { output("prompt")?.stringValue }

    /// What the callback is, by its type.
    public var kind: Kind {
        let prompt = prompt ?? ""
        func integer(_ name: String) -> Int? {
            output(name)?.doubleValue.flatMap { $0.isFinite && abs($0) < 1e9 ? Int($0) : nil }
        }
        func strings(_ name: String) -> [String] {
            guard case .array(let values)? = output(name) else { return [] }
            return values.compactMap(\.stringValue)
        }
        func bool(_ name: String) -> Bool? {
            switch output(name) {
            case .bool(let value)?: value
            case .string(let text)?: text == "true"
            default: nil
            }
        }
        switch type {
        case "NameCallback", "ValidatedCreateUsernameCallback":
            return .name(prompt: prompt)
        case "PasswordCallback", "ValidatedCreatePasswordCallback":
            return .password(prompt: prompt)
        case "TextInputCallback":
            return .textInput(prompt: prompt, defaultText: output("defaultText")?.stringValue)
        case "TextOutputCallback":
            return .textOutput(message: output("message")?.stringValue ?? "", messageType: integer("messageType") ?? 0)
        case "ChoiceCallback":
            return .choice(prompt: prompt, choices: strings("choices"), defaultChoice: integer("defaultChoice"))
        case "ConfirmationCallback":
            return .confirmation(prompt: prompt, options: strings("options"), defaultOption: integer("defaultOption"))
        case "HiddenValueCallback":
            return .hiddenValue(id: output("id")?.stringValue ?? "", value: output("value")?.stringValue ?? "")
        case "BooleanAttributeInputCallback":
            return .booleanAttribute(
                attribute: output("name")?.stringValue ?? "", prompt: prompt, required: bool("required") ?? false,
                value: bool("value") ?? false)
        case "TermsAndConditionsCallback":
            return .termsAndConditions(
                version: output("version")?.stringValue ?? "", terms: output("terms")?.stringValue ?? "",
                createDate: output("createDate")?.stringValue)
        case "PollingWaitCallback":
            let milliseconds = min(max(integer("waitTime") ?? 1_000, 0), 600_000)
            return .pollingWait(wait: .milliseconds(milliseconds), message: output("message")?.stringValue ?? "")
        case "MetadataCallback":
            return .metadata(output("data") ?? .null)
        default:
            return .other
        }
    }

    /// The answer the callback takes when nobody gives one: a choice's or confirmation's
    /// default, a text input's default text, a hidden value's value, a yes-or-no attribute's
    /// current value, or an unknown callback's value as AM sent it. `nil` when it has no input,
    /// or when only a person can answer it (a name, a password, terms to accept).
    public var defaultAnswer: JSONValue? {
        guard !inputs.isEmpty else { return nil }
        switch kind {
        case .name, .password, .termsAndConditions: return nil
        case .textInput(_, let defaultText): return defaultText.flatMap { $0.isEmpty ? nil : .string($0) }
        case .choice(_, _, let index), .confirmation(_, _, let index): return index.map { .number(Double($0)) }
        case .hiddenValue(_, let value): return .string(value)
        case .booleanAttribute(_, _, _, let value): return .bool(value)
        case .textOutput, .pollingWait, .metadata: return nil
        case .other:
            switch inputs[0].value {
            case .null: return nil
            case .string(let text) where text.isEmpty: return nil
            case let value: return value
            }
        }
    }

    /// Sets the value of the input at `index` (the first by default). An index past the inputs
    /// changes nothing and returns `false`.
    @discardableResult
    public mutating func setValue(_ value: JSONValue, input index: Int = 0) -> Bool {
        guard inputs.indices.contains(index) else { return false }
        inputs[index].value = value
        return true
    }

    /// Sets the first input to a text (a name, a password, free text).
    @discardableResult
    public mutating func setText(_ text: String) -> Bool { setValue(.string(text)) }

    /// Sets the first input to an index (a choice, a confirmation option).
    @discardableResult
    public mutating func select(_ index: Int) -> Bool { setValue(.number(Double(index))) }

    /// Sets the first input to a yes or no (terms accepted, an attribute).
    @discardableResult
    public mutating func setBool(_ value: Bool) -> Bool { setValue(.bool(value)) }
}

extension JourneyCallback: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The type and prompt, never an input's value.
    public var description: String {
        "\(type)\(prompt.map { "(\($0))" } ?? "")"
    }

    /// Same as `description`.
    public var debugDescription: String { description }

    /// A mirror without the inputs' values, so `dump(callback)` cannot print a password.
    public var customMirror: Mirror {
        Mirror(self, children: ["type": type, "inputs": inputs.map(\.name)], displayStyle: .struct)
    }
}

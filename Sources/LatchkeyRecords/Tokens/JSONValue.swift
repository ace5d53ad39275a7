/// A JSON value whose shape is not known in advance: the fields of a token response that
/// Latchkey does not model, or the claims of a token.
///
/// The value is kept exactly so that nothing a provider sends is lost, but its `description`
/// never prints string contents, because providers put secrets in unknown fields too.
public enum JSONValue: Sendable, Hashable, Codable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case array([JSONValue])
    case object([String: JSONValue])
    case null

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .bool(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        case .null: try container.encodeNil()
        }
    }

    /// The string, when this value is one.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The number, when this value is one (or a string that holds one).
    public var doubleValue: Double? {
        switch self {
        case .number(let value): return value
        case .string(let value): return Double(value)
        default: return nil
        }
    }
}

extension JSONValue: CustomStringConvertible, CustomDebugStringConvertible {
    /// The kind of value, never its contents.
    public var description: String {
        switch self {
        case .string: return "<string>"
        case .number: return "<number>"
        case .bool: return "<bool>"
        case .array(let value): return "<array of \(value.count)>"
        case .object(let value): return "<object with \(value.count) keys>"
        case .null: return "null"
        }
    }

    /// Same as `description`: the kind of value, never its contents.
    public var debugDescription: String { description }
}

/// One event of a `text/event-stream` body (WHATWG HTML, "Server-sent events" §9.2).
public struct ServerSentEvent: Sendable, Hashable {
    /// The event's type: its `event` field, `message` when it has none.
    public var type: String
    /// The event's data: its `data` lines joined by line feeds.
    public var data: String
    /// The stream's last event ID when the event was dispatched (its own `id`, or an earlier
    /// one's): what a client that reconnects sends as `Last-Event-ID`. Empty when none was set.
    public var lastEventID: String

    /// Creates an event.
    public init(type: String = "message", data: String, lastEventID: String = "") {
        self.type = type
        self.data = data
        self.lastEventID = lastEventID
    }
}

/// Reads a `text/event-stream` body as it arrives, in pieces of any size: a pure value, fed
/// bytes, that answers the events they complete (WHATWG HTML §9.2.6).
///
/// It differs from a browser's `EventSource` in one way: an event block that sets an `id` but
/// no data is returned too (with empty ``ServerSentEvent/data``), so that a client sees the
/// "priming" event a server sends to make a stream resumable (as MCP's Streamable HTTP does);
/// a consumer of messages skips events whose data is empty.
public struct ServerSentEventParser: Sendable {
    /// The stream's last event ID: sent as `Last-Event-ID` to resume it.
    public private(set) var lastEventID = ""
    /// The reconnection time the stream asked for (its latest `retry` field), if any.
    public private(set) var retry: Duration?

    /// The most bytes one event (its lines, data included) may hold: a stream whose event grows
    /// past it is not read on (``isOverLimit``), as a body larger than its limit is not.
    public let limit: Int
    /// Whether an event grew past ``limit``: nothing more is read, and the stream is to end as
    /// an error.
    public private(set) var isOverLimit = false

    private var line: [UInt8] = []
    private var afterCarriageReturn = false
    private var atStart = true
    private var type = ""
    private var data: [UInt8] = []
    private var hasData = false
    private var setID = false

    /// A parser at the start of a stream, whose events may hold at most `limit` bytes each.
    public init(limit: Int = 8 << 20) {
        self.limit = limit
    }

    /// Reads `bytes`, the stream's next piece, and answers the events it completes, in order.
    /// A line or event left incomplete waits for the next piece; at the end of the stream it is
    /// dropped, as the standard says.
    public mutating func consume(_ bytes: some Sequence<UInt8>) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        guard !isOverLimit else { return events }
        for byte in bytes {
            guard line.count + data.count < limit else {
                isOverLimit = true
                return events
            }
            switch byte {
            case UInt8(ascii: "\n") where afterCarriageReturn:
                // The line feed of a CRLF: its line was ended by the carriage return.
                afterCarriageReturn = false
            case UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                afterCarriageReturn = byte == UInt8(ascii: "\r")
                if let event = endLine() { events.append(event) }
            default:
                afterCarriageReturn = false
                line.append(byte)
            }
        }
        return events
    }

    /// Ends the current line: a blank one dispatches the event gathered so far.
    private mutating func endLine() -> ServerSentEvent? {
        defer { line.removeAll(keepingCapacity: true) }
        if atStart {
            atStart = false
            // A byte order mark may open the stream.
            if line.starts(with: [0xEF, 0xBB, 0xBF]) { line.removeFirst(3) }
        }
        guard !line.isEmpty else { return dispatch() }
        guard line.first != UInt8(ascii: ":") else { return nil }
        let colon = line.firstIndex(of: UInt8(ascii: ":")) ?? line.endIndex
        let name = String(decoding: line[..<colon], as: UTF8.self)
        var value = colon < line.endIndex ? line[(colon + 1)...] : []
        if value.first == UInt8(ascii: " ") { value = value.dropFirst() }
        switch name {
        case "event":
            type = String(decoding: value, as: UTF8.self)
        case "data":
            if hasData { data.append(UInt8(ascii: "\n")) }
            data.append(contentsOf: value)
            hasData = true
        case "id" where !value.contains(0):
            lastEventID = String(decoding: value, as: UTF8.self)
            setID = true
        case "retry" where !value.isEmpty && value.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }):
            if let milliseconds = Int(String(decoding: value, as: UTF8.self)) { retry = .milliseconds(milliseconds) }
        default:
            break
        }
        return nil
    }

    private mutating func dispatch() -> ServerSentEvent? {
        defer {
            (type, hasData, setID) = ("", false, false)
            data.removeAll(keepingCapacity: true)
        }
        guard hasData || setID else { return nil }
        return ServerSentEvent(
            type: type.isEmpty ? "message" : type, data: String(decoding: data, as: UTF8.self),
            lastEventID: lastEventID)
    }
}

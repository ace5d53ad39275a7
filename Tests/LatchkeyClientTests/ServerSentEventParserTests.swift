import LatchkeyHTTP
import Testing

/// The event-stream reader as a pure value: bytes in, events out (WHATWG HTML §9.2.6).
@Suite("Reading an event stream")
struct ServerSentEventParserTests {
    func events(_ pieces: [String]) -> ([ServerSentEvent], ServerSentEventParser) {
        var parser = ServerSentEventParser()
        var events: [ServerSentEvent] = []
        for piece in pieces { events += parser.consume(Array(piece.utf8)) }
        return (events, parser)
    }

    @Test("an event larger than the limit, in one line or many, stops the reading: nothing past it is taken")
    func limit() {
        var parser = ServerSentEventParser(limit: 1_024)
        let first = parser.consume(Array("data: small\n\n".utf8))
        #expect(first.map(\.data) == ["small"])
        #expect(!parser.isOverLimit)
        let huge = parser.consume(Array(("data: " + String(repeating: "x", count: 4_096) + "\n\n").utf8))
        #expect(huge.isEmpty)
        #expect(parser.isOverLimit)
        #expect(parser.consume(Array("data: after\n\n".utf8)).isEmpty, "nothing is read past the limit")
        var lines = ServerSentEventParser(limit: 1_024)
        let many = lines.consume(Array(String(repeating: "data: 0123456789\n", count: 200).utf8))
        #expect(many.isEmpty && lines.isOverLimit, "an event of many short lines counts whole")
    }

    @Test("an event per blank line: its data lines joined, its type, the last id")
    func basics() {
        let (read, parser) = events(["event: update\ndata: one\ndata:two\nid: 7\n\n", "data: three\n\n"])
        #expect(
            read == [
                ServerSentEvent(type: "update", data: "one\ntwo", lastEventID: "7"),
                ServerSentEvent(type: "message", data: "three", lastEventID: "7"),
            ])
        #expect(parser.lastEventID == "7")
    }

    @Test("lines end with CRLF, CR or LF, even when a CRLF is split between two pieces")
    func lineEndings() {
        let (read, _) = events(["data: a\r", "\n\r\ndata: b\rdata: c\r\r", "data: d\n\n"])
        #expect(read.map(\.data) == ["a", "b\nc", "d"])
    }

    @Test("a field split across pieces is read whole; an event unfinished at the end is not dispatched")
    func splitAndUnfinished() {
        let (read, _) = events(["da", "ta: {\"jsonrpc\":", "\"2.0\"}\n", "\n", "data: cut off"])
        #expect(read.map(\.data) == [#"{"jsonrpc":"2.0"}"#])
    }

    @Test("comments, unknown fields, a byte order mark and an id with NUL are ignored; retry is read")
    func ignoredFields() {
        let (read, parser) = events(["\u{FEFF}: keep-alive\nfoo: bar\nid: a\u{0}b\nretry: 2500\nretry: x\ndata\n\n"])
        #expect(read == [ServerSentEvent(data: "", lastEventID: "")])
        #expect(parser.retry == .milliseconds(2_500))
    }

    @Test("an event that only sets an id (a priming event) is returned with empty data, for resumption")
    func primingEvent() {
        let (read, parser) = events(["id: stream-1/0\ndata:\n\n", "id: stream-1/1\n\n", "\n"])
        #expect(read.map(\.lastEventID) == ["stream-1/0", "stream-1/1"])
        #expect(read.allSatisfy { $0.data.isEmpty })
        #expect(parser.lastEventID == "stream-1/1")
    }

    @Test("one space after the colon is dropped, a second is kept")
    func spaces() {
        let (read, _) = events(["data:  two spaces\n\n"])
        #expect(read.map(\.data) == [" two spaces"])
    }
}

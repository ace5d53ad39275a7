import Foundation
import LatchkeyRecords
import Testing

/// The agent's lines are written and read by hand (``AgentWire``); agents and clients of earlier
/// versions used Foundation's coders. Each is held against the other here, both ways, so that
/// the two forms cannot drift.
@Suite("The agent's wire, by hand and as Codable writes it")
struct AgentWireTests {
    static func encoded(_ value: some Encodable) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        return Array(try encoder.encode(value))
    }

    static func decoded<Value: Decodable>(_ type: Value.Type, _ line: [UInt8]) throws -> Value {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return try decoder.decode(type, from: Data(line))
    }

    static let awkward = "quote \" backslash \\ slash / tab \t newline \n bell \u{07} é 日本 🔑 \u{7F} \u{2028}"

    @Test("every request written is the one read, by hand and by Codable")
    func requests() throws {
        let requests = [
            AgentRequest(.token),
            AgentRequest(.idToken, account: "alice", minimumValidity: 60, store: "/home/a/.config/latchkey"),
            AgentRequest(
                .authorize, account: Self.awkward, resource: "https://api.example.com/x?y=1", scopes: ["a", "", "b c"],
                minimumValidity: 0.000_001, method: "POST", url: "https://api.example.com/", nonce: "n-1",
                accessToken: "token", store: Self.awkward),
            AgentRequest(.reject, scopes: [], minimumValidity: 1e300),
            AgentRequest(.describe, account: "alice"),
        ]
        for request in requests {
            let line = AgentWire.line(request)
            #expect(line.last == UInt8(ascii: "\n"))
            #expect(line.dropLast().allSatisfy { $0 != UInt8(ascii: "\n") })
            #expect(AgentWire.request(from: line.dropLast()) == request)
            #expect(try Self.decoded(AgentRequest.self, Array(line.dropLast())) == request)
            #expect(AgentWire.request(from: try Self.encoded(request)) == request)
        }
        // A margin JSON cannot write is sent as none, not as something the agent refuses.
        let endless = AgentWire.line(AgentRequest(.token, minimumValidity: .infinity))
        #expect(AgentWire.request(from: endless.dropLast()) == AgentRequest(.token))
        for line in ["", "{}", #"{"operation":"fly"}"#, #"{"operation":"token","scopes":"a"}"#] {
            #expect(AgentWire.request(from: Array(line.utf8)) == nil)
        }
    }

    @Test("every answer written is the one read, by hand and by Codable")
    func answers() throws {
        var full = AgentAnswer(
            message: Self.awkward, account: "alice", token: "eyJ.a.b", tokenType: "DPoP",
            expiresAt: Date(timeIntervalSince1970: 1_795_713_532.725_768), scopes: ["openid", Self.awkward],
            authorization: "DPoP eyJ", proof: "eyJ.p.s",
            claims: [
                "sub": .string(Self.awkward), "n": .number(-12.5e-3), "big": .number(1e300), "whole": .number(3),
                "huge": .number(1_152_921_504_606_846_976), "tiny": .number(.leastNonzeroMagnitude), "ok": .bool(true),
                "none": .null,
                "list": .array([.number(1), .object(["deep": .array([])]), .string("")]), "empty": .object([:]),
            ])
        full.issuer = "https://id.example.com"
        full.resources = ["https://api.example.com/", Self.awkward]
        let answers = [
            full, AgentAnswer(), AgentAnswer.failed(.signInRequired, "Sign in again."),
            AgentAnswer(token: "t", expiresAt: Date(timeIntervalSince1970: 0), scopes: []),
        ]
        for answer in answers {
            let line = AgentWire.line(answer)
            #expect(line.dropLast().allSatisfy { $0 != UInt8(ascii: "\n") })
            #expect(AgentWire.answer(from: line.dropLast()) == answer)
            #expect(try Self.decoded(AgentAnswer.self, Array(line.dropLast())) == answer)
            #expect(AgentWire.answer(from: try Self.encoded(answer)) == answer)
        }
        // A field this version does not know is passed over, as the decoder does.
        let newer = #"{"token":"t","later":[1,{"x":null},"\u00e9"],"failure":null}"#
        #expect(AgentWire.answer(from: Array(newer.utf8)) == AgentAnswer(token: "t"))
        let escaped = #"{"token":"\ud83d\udd11\/\b\f\u0000"}"#
        #expect(AgentWire.answer(from: Array(escaped.utf8))?.token == "🔑/\u{08}\u{0C}\u{00}")
    }

    @Test("the lines, byte for byte, each with its wire version: a change to the wire changes these")
    func golden() throws {
        func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }
        #expect(text(AgentWire.line(AgentRequest(.token))) == #"{"operation":"token","wire":1}"# + "\n")
        let authorize = AgentRequest(
            .authorize, account: "alice", resource: "https://api.example/", scopes: ["a", "b"], minimumValidity: 60,
            method: "GET", url: "https://api.example/x", nonce: "n-1")
        #expect(
            text(AgentWire.line(authorize))
                == #"{"account":"alice","method":"GET","minimumValidity":60,"nonce":"n-1","operation":"authorize","resource":"https://api.example/","scopes":["a","b"],"url":"https://api.example/x","wire":1}"#
                + "\n")
        #expect(
            text(AgentWire.line(AgentAnswer.failed(.busy, "Wait.")))
                == #"{"failure":"busy","message":"Wait.","wire":1}"# + "\n")
        var token = AgentAnswer(
            account: "alice", token: "t", tokenType: "Bearer", expiresAt: Date(timeIntervalSince1970: 1_795_713_532.5))
        token.issuer = "https://id.example"
        token.resources = ["https://api.example/"]
        #expect(
            text(AgentWire.line(token))
                == #"{"account":"alice","expiresAt":1795713532.5,"issuer":"https://id.example","resources":["https://api.example/"],"token":"t","tokenType":"Bearer","wire":1}"#
                + "\n")
        // A line without a version is version 1, as earlier builds wrote them; a later one is
        // read for its version even when its request is not one this version knows.
        let earlier = try #require(AgentWire.versionedRequest(from: Array(#"{"operation":"token"}"#.utf8)))
        #expect(earlier.version == 1 && earlier.request == AgentRequest(.token))
        let later = try #require(AgentWire.versionedRequest(from: Array(#"{"operation":"fly","wire":2}"#.utf8)))
        #expect(later.version == 2 && later.request == nil)
        for line in [#"{"wire":"2"}"#, #"{"wire":0}"#, #"{"wire":1.5}"#, #"{"wire":1e300}"#, "[]"] {
            #expect(AgentWire.versionedRequest(from: Array(line.utf8)) == nil, "\(line)")
        }
    }

    @Test("what is not an answer is refused, and nothing traps")
    func refused() {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        let lines = [
            "", " ", "{", "}", "[]", "null", "{\"token\":1}", "{\"scopes\":[\"a\",1]}", "{\"failure\":\"new-kind\"}",
            "{\"expiresAt\":\"soon\"}", "{\"claims\":[]}", "{\"token\":\"t\"} x", "{\"token\":\"t\",}", "{,}",
            "{\"token\" \"t\"}", "{\"token\":\"\\ud800\"}", "{\"token\":\"\\udc00\"}", "{\"token\":\"\\ud800\\u0041\"}",
            "{\"token\":\"\\x\"}", "{\"token\":\"\\u12\"}", "{\"token\":\"\u{01}\"}", "{\"token\":\"open",
            "{\"n\":01}", "{\"n\":1.}", "{\"n\":-}", "{\"n\":.5}", "{\"n\":1e}", "{\"n\":+1}", "{\"n\":tru}",
            "{\"n\":nul}", "{\"expiresAt\":1e999}", "{\"n\":[1,]}", "{\"n\":[1 2]}", "{\"claims\":{\"a\":\(deep)}}",
        ]
        for line in lines {
            #expect(AgentWire.answer(from: Array(line.utf8)) == nil, "\(line.prefix(40))")
        }
        // Bytes that are not UTF-8, inside a string.
        let invalid = Array(#"{"token":""#.utf8) + [0xFF, 0xFE] + Array(#""}"#.utf8)
        #expect(AgentWire.answer(from: invalid) == nil)
    }
}

import Foundation
import Latchkey
import LatchkeyAgent
import Testing

/// What an agent socket does with a request, as a value: no socket, no store.
@Suite("Agent socket limits")
struct AgentPolicyTests {
    let forward = AgentPolicy(accounts: ["alice"], resources: ["https://api.example/"], scopes: ["read"])

    @Test("the owner's socket answers everything but a refresh token, as asked")
    func owner() {
        let asked = AgentRequest(.token, account: "bob", resource: "https://any.example/")
        #expect(AgentPolicy.owner.decide(asked) == .answer(asked))
        #expect(AgentPolicy.owner.decide(AgentRequest(.idToken)) == .answer(AgentRequest(.idToken)))
        #expect(AgentPolicy.owner.decide(AgentRequest(.stop)) == .answer(AgentRequest(.stop)))
        guard case .refuse(let reason) = AgentPolicy.owner.decide(AgentRequest(.refreshToken)) else {
            Issue.record("a refresh token was handed out")
            return
        }
        #expect(reason.contains("never hands out a refresh token"))
    }

    @Test("a restricted socket narrows a request to its one account, resource and scopes")
    func narrows() {
        #expect(
            forward.decide(AgentRequest(.token))
                == .answer(
                    AgentRequest(.token, account: "alice", resource: "https://api.example/", scopes: ["read"])))
        #expect(
            forward.decide(AgentRequest(.reject, accessToken: "t"))
                == .answer(AgentRequest(.reject, account: "alice", accessToken: "t")))
    }

    @Test(
        "a restricted socket refuses other accounts, resources, wider scopes, ID tokens, userinfo and stop",
        arguments: [
            AgentRequest(.token, account: "bob"), AgentRequest(.token, resource: "https://other.example/"),
            AgentRequest(.token, scopes: ["read", "write"]), AgentRequest(.idToken), AgentRequest(.userInfo),
            AgentRequest(.stop), AgentRequest(.refreshToken),
        ])
    func refuses(_ request: AgentRequest) {
        let decision = forward.decide(request)
        #expect(!decision.isAnswer, "\(request)")
    }

    @Test("several accounts or resources: a request must name one")
    func mustName() {
        let two = AgentPolicy(accounts: ["alice", "bob"], resources: ["https://a.example/", "https://b.example/"])
        #expect(!two.decide(AgentRequest(.token)).isAnswer)
        #expect(!two.decide(AgentRequest(.token, account: "bob")).isAnswer)
        #expect(two.decide(AgentRequest(.token, account: "bob", resource: "https://b.example/")).isAnswer)
    }

    @Test("a maximum lifetime admits a token that ends within it, and none that does not say when it ends")
    func lifetime() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let short = AgentPolicy(maximumLifetime: 300)
        #expect(short.admits(expiresAt: now.addingTimeInterval(299), now: now))
        #expect(!short.admits(expiresAt: now.addingTimeInterval(301), now: now))
        #expect(!short.admits(expiresAt: nil, now: now))
        #expect(AgentPolicy.owner.admits(expiresAt: nil, now: now))
    }

    @Test("requests, answers and uses describe themselves without a token or a claim")
    func descriptions() {
        let secret = "eyJhbGciOi.secret-token"
        let answer = AgentAnswer(
            token: secret, authorization: "DPoP \(secret)", proof: secret, claims: ["email": .string("a@example.com")])
        let request = AgentRequest(.reject, account: "alice", accessToken: secret)
        let use = AgentUse(peerUserID: 1000, request: request, outcome: "answered")
        for text in [answer.description, request.description, use.description] {
            #expect(!text.contains(secret) && !text.contains("a@example.com"), "\(text)")
        }
        #expect(use.description.contains("uid 1000") && use.description.contains("alice"))
    }
}

extension AgentPolicy.Decision {
    var isAnswer: Bool {
        if case .answer = self { return true }
        return false
    }
}

@Suite("RequestBudget")
struct RequestBudgetTests {
    @Test("a burst is answered at once, then the rate; a quiet while refills it, never past the burst")
    func bucket() {
        var budget = RequestBudget(perSecond: 10, burst: 5)
        /// How many of `count` requests at `now` are answered.
        func answered(_ count: Int, at now: Duration) -> Int {
            (0..<count).filter { _ in budget.admit(at: now) }.count
        }
        let start = Duration.seconds(100)
        #expect(answered(6, at: start) == 5, "the burst, then nothing")
        #expect(answered(1, at: start + .milliseconds(50)) == 0, "half a request refilled")
        #expect(answered(2, at: start + .milliseconds(100)) == 1)
        // An hour's quiet refills the burst, not an hour of requests.
        #expect(answered(10, at: start + .seconds(3_600)) == 5)
        // A clock read out of order refills nothing.
        #expect(answered(1, at: start) == 0)
    }
}

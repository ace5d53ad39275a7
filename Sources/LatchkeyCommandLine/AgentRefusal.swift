package import LatchkeyRecords

extension CLIError {
    /// What a command says and exits with when `latchkey agent` refused: 4 when the account must
    /// sign in again (on the agent's machine), 5 when the provider is out of reach, 2 for a request
    /// it could not read, 1 otherwise; `nil` for an answer.
    package static func refusal(_ answer: AgentAnswer) -> CLIError? {
        guard let failure = answer.failure else { return nil }
        let message = "The agent refused: \(answer.message ?? failure.rawValue)"
        switch failure {
        case .signInRequired: return CLIError(status: .signInRequired, description: message)
        case .unreachable: return CLIError(status: .unreachable, description: message)
        // What the asker named (an account no one has, a request it cannot read): its input, as
        // the local store's answer says it (exit 2).
        case .invalid, .notFound: return .input(message)
        default: return .failed(message)
        }
    }
}

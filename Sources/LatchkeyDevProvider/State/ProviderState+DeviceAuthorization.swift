import Crypto
import Foundation

extension ProviderState {
    // MARK: Device authorization (RFC 8628)

    func startDeviceAuthorization(client: DevProviderConfiguration.Client, scopes: [String], audience: String?) -> (
        deviceCode: String, userCode: String, expiresIn: Int, interval: Int
    ) {
        let deviceCode = Self.randomToken(bytes: 24)
        let alphabet = Array("BCDFGHJKLMNPQRSTVWXZ")
        var generator = SystemRandomNumberGenerator()
        let letters = (0..<8).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] }
        let userCode = String(letters[0..<4]) + "-" + String(letters[4..<8])
        deviceRequests[deviceCode] = DeviceRequest(
            clientID: client.clientID, userCode: userCode, scopes: scopes, audience: audience,
            expiresAt: now().addingTimeInterval(TimeInterval(configuration.deviceCodeLifetime)),
            interval: configuration.devicePollingInterval)
        userCodes[userCode] = deviceCode
        return (deviceCode, userCode, configuration.deviceCodeLifetime, configuration.devicePollingInterval)
    }

    /// Whether `userCode` names a pending request (codes are read without case or dashes).
    func pendingDeviceRequest(userCode: String) -> Bool {
        guard let deviceCode = userCodes[Self.normalizeUserCode(userCode)], let request = deviceRequests[deviceCode],
            case .pending = request.status, request.expiresAt > now()
        else { return false }
        return true
    }

    func decideDeviceRequest(userCode: String, username: String?, approve: Bool) -> Bool {
        guard let deviceCode = userCodes[Self.normalizeUserCode(userCode)], var request = deviceRequests[deviceCode],
            case .pending = request.status, request.expiresAt > now()
        else { return false }
        if approve, let username {
            request.status = .approved(username: username, sid: startSession(username: username))
        } else {
            request.status = .denied
        }
        deviceRequests[deviceCode] = request
        return true
    }

    func pollDevice(_ deviceCode: String, client: DevProviderConfiguration.Client, jkt: String? = nil) async throws
        -> TokenAnswer
    {
        guard var request = deviceRequests[deviceCode], request.clientID == client.clientID else {
            throw OAuthFailure.invalidGrant("The device code is not valid.")
        }
        let date = now()
        guard request.expiresAt > date else {
            throw OAuthFailure("expired_token", "The device code has expired.")
        }
        defer { deviceRequests[deviceCode] = request }
        switch request.status {
        case .pending:
            if let last = request.lastPoll, date.timeIntervalSince(last) < TimeInterval(request.interval) {
                request.interval += 5
                request.lastPoll = date
                throw OAuthFailure("slow_down", "Polling too fast; wait \(request.interval) seconds between requests.")
            }
            request.lastPoll = date
            throw OAuthFailure("authorization_pending", "The user has not finished yet.")
        case .denied:
            throw OAuthFailure("access_denied", "The user denied the request.")
        case .consumed:
            throw OAuthFailure.invalidGrant("The device code was already used.")
        case .approved(let username, let sid):
            request.status = .consumed
            let grantID = newGrant(
                issuer: issuer, clientID: client.clientID, username: username, scopes: request.scopes, sid: sid,
                jkt: jkt)
            deviceRequests[deviceCode] = request
            return try await issueTokens(
                grantID: grantID, nonce: nil, newDeviceSecret: true, audience: request.audience)
        }
    }

    static func normalizeUserCode(_ code: String) -> String {
        let letters = code.uppercased().filter { $0.isLetter }
        guard letters.count == 8 else { return code.uppercased() }
        return String(letters.prefix(4)) + "-" + String(letters.suffix(4))
    }
}

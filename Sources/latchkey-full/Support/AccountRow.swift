import Foundation
import Latchkey

/// An account as `accounts` lists it and `status` starts from: what its summary says, opening
/// no token.
struct AccountRow: Encodable {
    var id: String
    var provider: String?
    var username: String?
    var email: String?
    var isDefault: Bool
    var accessTokenExpiresAt: Date?
    var hasRefreshToken: Bool

    init(_ account: AccountSummary, in session: Session, default current: CredentialID?) {
        id = account.id.rawValue
        provider = session.providerName(of: account)
        username = account.metadata.preferredUsername
        email = account.metadata.email
        isDefault = account.id == current
        accessTokenExpiresAt = account.accessTokenExpiresAt
        hasRefreshToken = account.hasRefreshToken
    }
}

import Foundation
import Latchkey
import LatchkeyCommandLine

/// An open home: its store and its provider clients.
///
/// Every read of the store here reports a storage failure as one (exit 1, naming the store's
/// error), never as "no account": a damaged default marker is not "No default account".
struct Session {
    let home: Home
    let store: CredentialStore
    let clients: [String: ProviderClient]
    /// The configured providers that cannot be used, by name, with why.
    var unusable: [String: CLIError] = [:]
    /// The process's environment (`LATCHKEY_ACCOUNT`), read once: the agent asks for an account
    /// at every request, and the environment is copied whole at every read.
    let environment = ProcessInfo.processInfo.environment

    /// The client of the provider named `name`; the reason it cannot be used when it cannot.
    func client(named name: String) throws -> ProviderClient {
        if let client = clients[name] { return client }
        if let reason = unusable[name] { throw reason }
        throw CLIError.input("No provider is named \(name).")
    }

    /// Runs a read of the store, its failure reported as a failure of the store.
    func reading<T>(_ what: String = "The credential store", _ read: () async throws(StorageError) -> T)
        async throws -> T
    {
        do {
            return try await read()
        } catch {
            throw CLIError.failed("\(what) cannot be read: \(error)")
        }
    }

    /// The default account's id, read without opening any token; `nil` when none is set. A
    /// damaged default marker is an error that says so.
    func defaultAccountID() async throws -> CredentialID? {
        try await reading { () async throws(StorageError) in try await store.defaultCredentialID() }
    }

    /// The default account's id for a listing: a damaged default marker shows as no default,
    /// since the listing reports the damaged marker itself; any other failure is one.
    func defaultAccountIDForListing() async throws -> CredentialID? {
        do {
            return try await store.defaultCredentialID()
        } catch  where error.code == .corruptRecord {
            return nil
        } catch {
            throw CLIError.failed("The credential store cannot be read: \(error)")
        }
    }

    /// The id of the account `reference` names (id, username or email), else `LATCHKEY_ACCOUNT`
    /// names, else of the default account, read without opening any token.
    func accountID(_ reference: String?) async throws -> CredentialID {
        let reference = AccountChoice.reference(reference, environment: environment)
        guard let reference else {
            guard let id = try await defaultAccountID() else {
                throw CLIError.input("No default account; name one, or choose one with `latchkey use`.")
            }
            return id
        }
        let all = try await reading { () async throws(StorageError) in try await store.accounts() }
        let matches = all.filter { AccountChoice.matches($0, reference) }
        guard let match = matches.first else { throw CLIError.input("No account matches \(reference).") }
        guard matches.count == 1 else {
            throw CLIError.input("\(matches.count) accounts match \(reference); use the account id.")
        }
        return match.id
    }

    /// The account `reference` names (id, username or email), or the default account, with its
    /// tokens read and checked against the sealed metadata (a listing is not).
    func account(_ reference: String?) async throws -> StoredCredential {
        let id = try await accountID(reference)
        let stored = try await reading("The account \(id)") { () async throws(StorageError) in
            try await store.credential(for: id)
        }
        guard let stored else {
            let named = AccountChoice.reference(reference, environment: environment)
            throw CLIError.input(named.map { "No account matches \($0)." } ?? "The default account is gone.")
        }
        return stored
    }

    /// The live handle of a stored credential, through the provider it came from.
    func credential(_ stored: StoredCredential) async throws -> Credential {
        guard let provider = await store.provider(for: stored.token.provider) else {
            if let name = providerName(of: stored), let reason = unusable[name] { throw reason }
            throw CLIError.input(
                "The provider of \(stored.metadata.displayName ?? stored.id.rawValue) is no longer configured.")
        }
        return await store.credential(stored.id, provider: provider)
    }

    /// The name of the provider a credential came from.
    func providerName(of stored: StoredCredential) -> String? {
        providerName(of: AccountSummary(stored))
    }

    /// The name of the provider an account came from.
    func providerName(of account: AccountSummary) -> String? {
        ProviderEntry.name(taggedOn: account.metadata.tags)
            ?? clients.first {
                $0.value.identityProvider.identity
                    == ProviderIdentity(issuer: account.metadata.issuer, clientID: account.metadata.clientID)
            }?.key
    }

    /// Retries the outbox entries that are due, within a short time bound, before network work.
    func retryDueOutbox() async {
        _ = await store.drainOutbox(DrainOptions(timeLimit: .seconds(3)))
    }
}

/// What a command that works on one account starts with.
struct AccountContext {
    let session: Session
    let stored: StoredCredential
    let credential: Credential
}

extension GlobalOptions {
    /// Opens the store, finds the account `reference` names (the default one when nil), and
    /// gets its handle; first retries what is due in the outbox when `retryingOutbox` says so
    /// for this account (a command about to go to the network).
    func account(_ reference: String?, retryingOutbox: (StoredCredential) -> Bool = { _ in true }) async throws
        -> AccountContext
    {
        let session = try await location.openStore()
        let stored = try await session.account(reference)
        if retryingOutbox(stored) { await session.retryDueOutbox() }
        return AccountContext(session: session, stored: stored, credential: try await session.credential(stored))
    }
}

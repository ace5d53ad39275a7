import LatchkeyRecords
import SystemPackage

extension HomeLocation {
    /// `providers.json`, or `nil` when there is none. It says where refresh tokens are sent, so it
    /// is trusted as the store's own files are (``readTrustedFile(_:what:limit:)``).
    package func readProvidersFile() throws -> Data? {
        let path = providersFile.path
        guard let bytes = try readTrustedFile(path, what: "The provider list", limit: 16 << 20) else { return nil }
        guard bytes.count <= 16 << 20 else { throw CLIError.input("\(path) is too large to be a provider list.") }
        return Data(bytes)
    }

    /// What a file of the home that says where secrets go (the provider list, the key's
    /// location) holds, or `nil` when there is none. It is trusted as the store's own files are:
    /// a regular file (not a link) of the user's, in a home of the user's, neither open to other
    /// users' writes. At most `limit` bytes and one more are read.
    package func readTrustedFile(_ path: String, what: String, limit: Int) throws -> [UInt8]? {
        do throws(StorageError) {
            if let home = try KeyFiles.status(folder.path, followingLinks: true) {
                try KeyFiles.checkTrust(
                    home, path: folder.path, what: "The Latchkey home", forbidden: [.groupWrite, .otherWrite],
                    fix: "chmod go-w")
            }
            return try KeyFiles.readTrustedFile(
                at: path, what: what, forbidden: [.groupWrite, .otherWrite], fix: "chmod go-w", limit: limit)
        } catch {
            throw CLIError.failed(error.description)
        }
    }
}

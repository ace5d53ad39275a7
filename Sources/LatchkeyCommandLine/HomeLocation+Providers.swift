import LatchkeyRecords
import SystemPackage

extension HomeLocation {
    /// `providers.json`, or `nil` when there is none. It says where refresh tokens are sent, so it
    /// is trusted as the store's own files are: a regular file (not a link) of the user's, in a
    /// home of the user's, neither open to other users' writes.
    package func readProvidersFile() throws -> Data? {
        let path = providersFile.path
        do throws(StorageError) {
            if let home = try KeyFiles.status(folder.path, followingLinks: true) {
                try KeyFiles.checkTrust(
                    home, path: folder.path, what: "The Latchkey home", forbidden: [.groupWrite, .otherWrite],
                    fix: "chmod go-w")
            }
            guard let info = try KeyFiles.status(path, followingLinks: false) else { return nil }
            guard info.type == .regular else {
                throw StorageError(
                    .insecureFile, path: path,
                    reason:
                        "The provider list is not a regular file (a symbolic link, say); Latchkey reads only a file of its own there."
                )
            }
            try KeyFiles.checkTrust(
                info, path: path, what: "The provider list", forbidden: [.groupWrite, .otherWrite], fix: "chmod go-w")
        } catch {
            throw CLIError.failed(error.description)
        }
        do {
            let descriptor = try FileDescriptor.open(FilePath(path), .readOnly, options: [.noFollow, .closeOnExec])
            defer { try? descriptor.close() }
            var data = Data()
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = try buffer.withUnsafeMutableBytes { try descriptor.read(into: $0) }
                if count == 0 { return data }
                data.append(contentsOf: buffer[..<count])
                guard data.count <= 16 << 20 else {
                    throw CLIError.input("\(path) is too large to be a provider list.")
                }
            }
        } catch let error as CLIError {
            throw error
        } catch {
            throw CLIError.failed("\(path) cannot be read: \(error)")
        }
    }
}

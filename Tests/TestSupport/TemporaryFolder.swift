import Foundation

/// A new, empty folder under the system's temporary folder, removed by `cleanUp()`.
public struct TemporaryFolder: Sendable {
    public let path: String

    public init() throws {
        path =
            FileManager.default.temporaryDirectory
            .appendingPathComponent("latchkey-tests-\(UUID().uuidString)").path
        // 0700 whatever the umask: the store refuses a folder open to other users' writes.
        try FileManager.default.createDirectory(
            atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    /// The path of `name` in the folder.
    public func file(_ name: String) -> String { (path as NSString).appendingPathComponent(name) }

    public func cleanUp() {
        _ = try? FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: path)
        try? FileManager.default.removeItem(atPath: path)
    }
}

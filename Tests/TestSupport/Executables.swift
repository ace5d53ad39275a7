public import Foundation

/// The package's own executables, built beside the test bundle by `swift build --build-tests`.
public enum Executables {
    /// The folder that holds the test bundle and the package's executables
    /// (`LATCHKEY_BUILD_FOLDER` when set).
    public static var buildFolder: URL {
        if let folder = ProcessInfo.processInfo.environment["LATCHKEY_BUILD_FOLDER"] {
            return URL(fileURLWithPath: folder)
        }
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        while url.pathComponents.count > 1 {
            url.deleteLastPathComponent()
            var isDirectory: ObjCBool = false
            let candidate = url.appendingPathComponent("latchkey").path
            if FileManager.default.fileExists(atPath: candidate, isDirectory: &isDirectory), !isDirectory.boolValue {
                return url
            }
        }
        return URL(fileURLWithPath: ".build/debug", isDirectory: true)
    }

    /// The executable called `name`, e.g. `latchkey` or `latchkey-store-worker`.
    public static func url(_ name: String) -> URL { buildFolder.appendingPathComponent(name) }

    /// The `latchkey` command-line tool.
    public static var latchkey: URL { url("latchkey") }
}

/// Latchkey's version.
public enum LatchkeyVersion {
    /// The version of this build of Latchkey, as `latchkey --version` prints it, and as
    /// `CHANGELOG.md` names the release.
    public static let current = "0.13.2"
}

/// Latchkey's version.
public enum LatchkeyVersion {
    /// The version of this build of Latchkey, as `latchkey --version` prints it.
    public static let current = "0.1.0-dev"
}

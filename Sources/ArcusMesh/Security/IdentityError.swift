/// Why an identity, a public key or an identity file could not be used. Each case says what to do.
public enum IdentityError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A public key that is not 64 bytes of valid Ed25519 and X25519 keys.
    case malformedPublicKey(byteCount: Int)
    /// Serialised identity bytes of the wrong length or version.
    case malformedIdentity(String)
    /// The identity file is open to others, owned by someone else, or unreadable.
    case file(SecretFileError)

    public var description: String {
        switch self {
        case .malformedPublicKey(let count):
            return "a peer public key is 64 bytes (Ed25519 signing key, then X25519 agreement key); got \(count) bytes"
        case .malformedIdentity(let why):
            return "the identity is malformed: \(why)"
        case .file(let error):
            return "the identity file cannot be used: \(error)"
        }
    }
}

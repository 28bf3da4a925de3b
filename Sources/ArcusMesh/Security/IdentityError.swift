/// Why an identity, a public key or an identity file could not be used. Each case says what to do.
public enum IdentityError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A public key that is not 64 bytes of valid Ed25519 and X25519 keys.
    case malformedPublicKey(byteCount: Int)
    /// Serialised identity bytes of the wrong length or version.
    case malformedIdentity(String)
    /// The identity file may be read by its group or others: it holds the peer's private key.
    case fileTooOpen(path: String, mode: UInt32)
    /// The identity file belongs to another user than the one running this process.
    case fileNotOwned(path: String, owner: UInt32, user: UInt32)
    /// A system call on the identity file failed.
    case fileSystem(path: String, operation: String, errno: Int32, message: String)

    public var description: String {
        switch self {
        case .malformedPublicKey(let count):
            return "a peer public key is 64 bytes (Ed25519 signing key, then X25519 agreement key); got \(count) bytes"
        case .malformedIdentity(let why):
            return "the identity is malformed: \(why)"
        case .fileTooOpen(let path, let mode):
            return "the identity file \(path) has mode \(String(mode & 0o777, radix: 8)); it holds this peer's private key, so "
                + "only its owner may read it. Run `chmod 600 \(path)` (and replace the identity if others may have read it)"
        case .fileNotOwned(let path, let owner, let user):
            return "the identity file \(path) belongs to user \(owner), not to user \(user) who runs this peer; "
                + "run the peer as its owner, or `chown` the file to this user"
        case .fileSystem(let path, let operation, let errno, let message):
            return "\(operation) \(path) failed: \(message) (errno \(errno))"
        }
    }
}

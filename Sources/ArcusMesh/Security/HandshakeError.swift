/// Why a handshake did not produce a `SecureLink`. The link is closed in every case; a peer can
/// try again on another link, or with another credential.
public enum HandshakeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The peer did not finish its part within the timeout.
    case timedOut(after: Duration, link: String)
    /// The link closed before the handshake ended: the peer refused this side's credential (it
    /// closes without saying why, to tell an impostor nothing), or it went away.
    case linkClosed(link: String, step: String)
    /// The two sides prove membership in different ways.
    case modeMismatch(local: HandshakeMode, remote: HandshakeMode)
    /// The peer speaks a handshake version this build does not.
    case unsupportedVersion(UInt8)
    /// The peer's message did not authenticate under this side's mesh secret: it does not hold the
    /// same secret (another mesh, or a stale secret), or the message was altered.
    case membershipNotProven(link: String)
    /// The peer's certificate is not valid for this mesh.
    case certificateRefused(CertificateError)
    /// This side's own certificate names another key than this side's identity.
    case certificateNotForThisIdentity
    /// A handshake message that breaks the format, or does not authenticate.
    case malformedMessage(String)
    /// The link's MTU cannot carry the session's frames.
    case linkTooSmall(mtu: Int, needed: Int)

    public var description: String {
        switch self {
        case .timedOut(let duration, let link):
            return "the handshake on \(link) did not complete within \(duration); the link was closed"
        case .linkClosed(let link, let step):
            return "\(link) closed during the handshake (\(step)): the peer refused this peer's credential, or went away"
        case .modeMismatch(let local, let remote):
            return "this peer proves membership with \(local), the remote peer with \(remote); configure both the same way"
        case .unsupportedVersion(let version):
            return "the peer speaks handshake version \(version); this build speaks \(MeshHandshake.version)"
        case .membershipNotProven(let link):
            return "the peer on \(link) does not hold this mesh's shared secret (another mesh, or a stale secret)"
        case .certificateRefused(let error):
            return "the peer's certificate was refused: \(error)"
        case .certificateNotForThisIdentity:
            return "this peer's certificate was issued for another identity; issue one for this peer's public key"
        case .malformedMessage(let why):
            return "a handshake message is malformed: \(why)"
        case .linkTooSmall(let mtu, let needed):
            return "a link with an MTU of \(mtu) bytes cannot carry a secure session; it needs at least \(needed)"
        }
    }
}

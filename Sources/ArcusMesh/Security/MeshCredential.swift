/// How a peer proves, in every handshake, that it belongs to the mesh, and checks that the other
/// side does too. Both sides of a link must use the same kind.
public enum MeshCredential: Sendable {
    /// The secret every peer holds; every peer gets `CollectionPermissions.full`.
    case sharedSecret(MeshSecret)
    /// This peer's certificate, and the authority key that the other side's must verify with.
    case certificate(PeerCertificate, authority: AuthorityPublicKey)

    /// The byte that names the kind in the first handshake message, so that a mismatch is
    /// reported as such rather than as a bad key.
    var mode: HandshakeMode {
        switch self {
        case .sharedSecret: return .sharedSecret
        case .certificate: return .certificate
        }
    }
}

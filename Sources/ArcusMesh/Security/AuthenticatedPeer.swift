/// The peer at the other end of a `SecureLink`, as the handshake proved it: it holds the private
/// key of `publicKey`, and belongs to the mesh by the shared secret or by `certificate`.
public struct AuthenticatedPeer: Sendable, Hashable, CustomStringConvertible {
    public let publicKey: PeerPublicKey
    /// The name its certificate gives it; nil with a shared secret.
    public let name: String?
    /// What it may read and write: its certificate's, or everything with a shared secret.
    public let permissions: CollectionPermissions
    /// Its verified certificate; nil with a shared secret.
    public let certificate: PeerCertificate?

    public var peerID: PeerID { publicKey.peerID }

    public var description: String {
        name.map { "\($0) (\(peerID))" } ?? "\(peerID)"
    }
}

import Foundation
import Synchronization

/// The revocation list in force for one mesh, shared by everything that admits peers: the
/// handshake refuses a revoked peer (its certificate, and any resumption ticket it holds), and
/// whoever receives a newer list adopts it here (the agent, from its configuration, its API and
/// its peers) and closes what the revoked peers still hold.
public final class MeshRevocations: Sendable {
    public let authority: AuthorityPublicKey
    private let current = Mutex<RevocationList?>(nil)

    public init(authority: AuthorityPublicKey) {
        self.authority = authority
    }

    /// The list in force; nil before any.
    public var list: RevocationList? { current.withLock { $0 } }

    /// Whether the list in force names `peer`.
    public func revokes(_ peer: PeerID) -> Bool { current.withLock { $0?.revokes(peer) ?? false } }

    /// Takes `list` in when the authority signed it and it is newer than the one in force.
    /// Returns the peers it revokes that the one before did not (empty when nothing changed);
    /// throws `CertificateError` when it does not verify.
    @discardableResult
    public func adopt(_ list: RevocationList) throws(CertificateError) -> Set<PeerID> {
        try list.verify(authority: authority)
        return current.withLock { current in
            if let current, current.serial >= list.serial { return [] }
            let before = current?.peers ?? []
            current = list
            return list.peers.subtracting(before)
        }
    }
}

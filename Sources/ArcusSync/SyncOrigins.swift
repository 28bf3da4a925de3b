import ArcusCRDT
import ArcusCodec

/// Who may have written what: the engine asks it about every writer (every site) whose events
/// a peer passes on, and hands it the credentials peers send (`SyncMessage.credentials`).
///
/// Sync knows nothing of keys or certificates: the agent implements this over the mesh's
/// certificates, where a site is named by its writer's public key, so a certificate says both
/// who the site is and what it may write. An engine with no `SyncOrigins` takes every writer's
/// events (a mesh whose members all hold every right, such as one joined by a shared secret).
public protocol SyncOrigins: Sendable {
    /// The collections `site` may write, as its credential says now; nil when no valid
    /// credential for it is known here (never seen, expired or revoked): its events are refused.
    func writable(by site: SiteID) -> CollectionSet?

    /// The credential a peer needs to check `site`'s events, sent ahead of them; nil when none
    /// is known here.
    func credential(of site: SiteID) -> Credentials.Item?

    /// Takes in the credentials `peer` sent (checking each; what does not check is dropped and
    /// may be logged).
    func receive(_ items: [Credentials.Item], from peer: String)

    /// What every session tells the peer at its start, such as the latest revocation list.
    var announcements: [Credentials.Item] { get }
}

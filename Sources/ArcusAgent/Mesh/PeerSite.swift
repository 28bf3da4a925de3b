import ArcusCRDT
import ArcusMesh
import ArcusStore
import Foundation

extension SiteID {
    /// The site a peer's store writes under: the first 8 bytes of its `PeerID`, which hashes its
    /// public keys. So a peer's writes are bound to its identity — a sync hello naming another
    /// site is refused, and anyone holding the writer's certificate can tell whose writes are
    /// whose, whoever relays them. To write under another peer's site, a member would have to find
    /// a key whose hash starts with the same 64 bits (about 2^64 tries) and have the authority
    /// certify it; a receiver also refuses a second credential for a site it knows.
    public init(peer: PeerID) {
        let raw = peer.bytes.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        // Zero is no site; a key whose hash starts with 64 zero bits is not worth a special case.
        self.init(raw == 0 ? 1 : raw)
    }
}

/// The store of a data directory, opened under the site its identity names (made, with the
/// identity, the first time): what the agent and `arcus exec --data` open, so that every write a
/// device makes is stamped with the site its key names.
package enum DataDirectoryStore {
    package static func open(_ directory: URL, options: Store.Options = Store.Options()) throws -> (store: Store, identity: PeerIdentity) {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let identity = try PeerIdentity.load(orCreateAt: directory.appendingPathComponent("identity"))
        var options = options
        options.site = SiteID(peer: identity.peerID)
        return (try Store(directory: directory, options: options), identity)
    }
}

import ArcusMesh
import ArcusSync

extension SyncPermissions {
    /// What a certificate (or the shared secret: everything) lets a mesh peer do, as the sync
    /// engine enforces it. "*" means every collection in both.
    public init(_ permissions: CollectionPermissions) {
        self.init(read: permissions.read, write: permissions.write)
    }
}

/// Runs sync over authenticated, encrypted links: the composition of `MeshHandshake` (ArcusMesh)
/// and `SyncEngine.connect` (ArcusSync), which know nothing of each other.
///
/// For each link: the Noise handshake (identity and credential), then a sync session over the
/// `SecureLink` whose permissions are the authenticated peer's (`SyncPermissions(_:)`), and
/// whose sync hello must name the site id bound to that peer (`SyncPeerBindings`,
/// `AuthenticatedSyncChannel`). A peer that fails the handshake gets no link and no session.
public struct SecureConnector: Sendable {
    public let handshake: MeshHandshake
    public let bindings: SyncPeerBindings

    public init(handshake: MeshHandshake, bindings: SyncPeerBindings = SyncPeerBindings()) {
        self.handshake = handshake
        self.bindings = bindings
    }

    public init(identity: PeerIdentity, credential: MeshCredential, bindings: SyncPeerBindings = SyncPeerBindings()) {
        self.init(handshake: MeshHandshake(identity: identity, credential: credential), bindings: bindings)
    }

    /// A sync session running over one secured link.
    public struct Connection: Sendable {
        public let link: SecureLink
        /// The channel on the secure link; it counts the sync frames this side sent.
        public let frames: LinkSyncChannel
        public let channel: AuthenticatedSyncChannel
        public let session: SyncSession
        public var peer: AuthenticatedPeer { link.peer }
    }

    /// Secures `link` (`.initiator` on the side that dialled) and starts a sync session with
    /// `engine` over it. Throws `HandshakeError` (the link is closed) when the peer is not let in.
    public func connect(_ link: any Link, as role: HandshakeRole, to engine: SyncEngine, pulling: Bool = true) async throws -> Connection {
        let secure = try await handshake.secure(link, as: role)
        return connect(secure, to: engine, pulling: pulling)
    }

    /// Starts a sync session with `engine` over a link already secured.
    public func connect(_ secure: SecureLink, to engine: SyncEngine, pulling: Bool = true) -> Connection {
        let frames = LinkSyncChannel(secure)
        let channel = AuthenticatedSyncChannel(frames, peer: secure.peer, bindings: bindings)
        let session = engine.connect(channel, pulling: pulling, permissions: SyncPermissions(secure.peer.permissions))
        return Connection(link: secure, frames: frames, channel: channel, session: session)
    }

    /// Starts a sync session with `engine` over the multiplexer's session with `peer`, whose
    /// links are `SecureLink`s that authenticated it (the multiplexer refuses a link whose
    /// session hello names anyone else). Permissions are taken from `peer` as authenticated.
    public func connect(_ session: PeerSession, authenticatedAs peer: AuthenticatedPeer, to engine: SyncEngine, pulling: Bool = true) -> SyncSession {
        precondition(session.peer == peer.peerID, "the mesh session is with \(session.peer), not with \(peer)")
        let channel = AuthenticatedSyncChannel(PeerSessionSyncChannel(session), peer: peer, bindings: bindings)
        return engine.connect(channel, pulling: pulling, permissions: SyncPermissions(peer.permissions))
    }
}

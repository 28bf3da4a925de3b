import ArcusCodec
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
    /// The sync hellos peers sent, so that resumed links need not carry them again.
    public let hellos = SyncHelloMemory()

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

    /// Secures `link` (`.initiator` on the side that dialled, naming the `peer` it dialled when it
    /// knows it, so that the link can resume) and starts a sync session with `engine` over it.
    /// Throws `HandshakeError` (the link is closed) when the peer is not let in.
    public func connect(
        _ link: any Link, as role: HandshakeRole, peer: PeerID? = nil, to engine: SyncEngine, pulling: Bool = true
    ) async throws -> Connection {
        return connect(try await secure(link, as: role, peer: peer, for: engine), to: engine, pulling: pulling)
    }

    /// Runs the handshake on `link` for a sync session of `engine`: resumed when this side dials
    /// (`peer` named) a peer it holds a ticket for, with the hints that let both sides leave out
    /// the sync hellos the other holds.
    public func secure(_ link: any Link, as role: HandshakeRole, peer: PeerID? = nil, for engine: SyncEngine) async throws -> SecureLink {
        let hellos = self.hellos
        var encoder = FrameEncoder()
        let ownHello = encoder.encode(.hello(engine.hello))
        return try await handshake.secure(link, as: role, peer: peer, hint: { hellos.hint(for: $0, ownHello: ownHello) })
    }

    /// Starts a sync session with `engine` over a link already secured.
    public func connect(_ secure: SecureLink, to engine: SyncEngine, pulling: Bool = true) -> Connection {
        let frames = LinkSyncChannel(secure)
        let channel = AuthenticatedSyncChannel(
            frames, peer: secure.peer, bindings: bindings, hellos: hellos, resumption: secure.resumption
        )
        let session = engine.connect(channel, pulling: pulling, permissions: SyncPermissions(secure.peer.permissions))
        return Connection(link: secure, frames: frames, channel: channel, session: session)
    }

    /// Starts a sync session with `engine` over the multiplexer's session with `peer`, whose
    /// links are `SecureLink`s that authenticated it (the multiplexer refuses a link whose
    /// session hello names anyone else). Permissions are taken from `peer` as authenticated.
    public func connect(_ session: PeerSession, authenticatedAs peer: AuthenticatedPeer, to engine: SyncEngine, pulling: Bool = true) -> SyncSession {
        precondition(session.peer == peer.peerID, "the mesh session is with \(session.peer), not with \(peer)")
        let channel = AuthenticatedSyncChannel(PeerSessionSyncChannel(session), peer: peer, bindings: bindings, hellos: hellos)
        return engine.connect(channel, pulling: pulling, permissions: SyncPermissions(peer.permissions))
    }
}

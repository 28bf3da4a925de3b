import ArcusCodec
import ArcusMesh
import ArcusSync
import Synchronization

extension SyncPermissions {
    /// What a certificate (or the shared secret: everything) lets a mesh peer do, as the sync
    /// engine enforces it. "*" means every collection in both.
    public init(_ permissions: CollectionPermissions) {
        self.init(read: permissions.read, write: permissions.write, relay: permissions.relay)
    }
}

/// Runs sync over authenticated, encrypted links: the composition of `MeshHandshake` (ArcusMesh)
/// and `SyncEngine.connect` (ArcusSync), which know nothing of each other.
///
/// For each link: the Noise handshake (identity and credential), then a sync session over the
/// `SecureLink` whose permissions are the authenticated peer's (`SyncPermissions(_:)`), and
/// whose sync hello must name the site the peer's key names (`SiteID(peer:)`,
/// `AuthenticatedSyncChannel`). A peer that fails the handshake gets no link and no session.
public struct SecureConnector: Sendable {
    public let handshake: MeshHandshake
    /// The sync hellos peers sent, so that resumed links need not carry them again.
    public let hellos = SyncHelloMemory()
    /// The codec contexts of the last session with each peer, for resumed links to go on from.
    public let codecs = SyncCodecMemory()

    /// In a certificate mesh, where the certificates of the peers this side authenticates go, so
    /// that it can check their writes when others relay them, and pass the certificates on.
    public let origins: MeshOrigins?

    public init(handshake: MeshHandshake, origins: MeshOrigins? = nil) {
        self.handshake = handshake
        self.origins = origins
    }

    public init(identity: PeerIdentity, credential: MeshCredential, origins: MeshOrigins? = nil) {
        self.init(handshake: MeshHandshake(identity: identity, credential: credential), origins: origins)
    }

    /// A sync session running over one secured link.
    public struct Connection: Sendable {
        public let link: SecureLink
        /// The channel on the secure link; it counts the sync frames this side sent.
        public let frames: LinkSyncChannel
        public let channel: AuthenticatedSyncChannel
        public let session: SyncSession
        public var peer: AuthenticatedPeer { link.peer }
        /// Whether the session went on from the codec contexts of the last session with the peer,
        /// for the frames it sends and for those it receives (see `SyncCodecMemory`).
        public let continuedCodec: (sending: Bool, receiving: Bool)
        /// Ends once the session has ended and its codec contexts are kept for the next one.
        let kept: Task<Void, Never>?

        /// Waits until the session has ended and what it leaves the next session is kept.
        public func waitUntilEnded() async {
            await session.waitUntilEnded()
            await kept?.value
        }
    }

    /// Secures `link` (`.initiator` on the side that dialled, naming the `peer` it dialled when it
    /// knows it, so that the link can resume) and starts a sync session with `engine` over it.
    /// Throws `HandshakeError` (the link is closed) when the peer is not let in.
    public func connect(
        _ link: any Link, as role: HandshakeRole, peer: PeerID? = nil, to engine: SyncEngine, pulling: Bool = true
    ) async throws -> Connection {
        return connect(try await secure(link, as: role, peer: peer, for: engine), to: engine, pulling: pulling)
    }

    /// A link the handshake secured for a sync session, with the codec contexts this side
    /// advertised if it resumed: the session goes on from those the peer holds too.
    public struct SecuredLink: Sendable {
        public let link: SecureLink
        let advertised: CodecContinuation?
    }

    /// Runs the handshake on `link` for a sync session of `engine`: resumed when this side dials
    /// (`peer` named) a peer it holds a ticket for, with hints that let both sides leave out the
    /// sync hellos the other holds and go on with the codec contexts both hold (`SyncResumptionHint`).
    /// `timeout` replaces the handshake's own for this link.
    public func secure(
        _ link: any Link, as role: HandshakeRole, peer: PeerID? = nil, for engine: SyncEngine, timeout: Duration? = nil
    ) async throws -> SecuredLink {
        let (hellos, codecs) = (self.hellos, self.codecs)
        var encoder = FrameEncoder()
        let ownHello = encoder.encode(.hello(engine.hello))
        // The hint is asked for once at most, during the handshake; what it advertised goes with the link.
        let advertised = AdvertisedCodecs()
        let secure = try await handshake.secure(link, as: role, peer: peer, timeout: timeout, hint: { peer in
            let codec = codecs.advertise(for: peer)
            advertised.value.withLock { $0 = codec.pinned }
            return SyncResumptionHint(hello: hellos.tags(for: peer, ownHello: ownHello), codec: codec.tags).bytes
        })
        return SecuredLink(link: secure, advertised: advertised.value.withLock { $0 })
    }

    /// Starts a sync session with `engine` over a link already secured (with no codec contexts
    /// to go on from).
    public func connect(_ secure: SecureLink, to engine: SyncEngine, pulling: Bool = true) -> Connection {
        connect(SecuredLink(link: secure, advertised: nil), to: engine, pulling: pulling)
    }

    /// Starts a sync session with `engine` over a link `secure(_:as:peer:for:)` secured. When the
    /// session ends, its codec contexts are kept for the next one with the same peer.
    public func connect(_ secured: SecuredLink, to engine: SyncEngine, pulling: Bool = true) -> Connection {
        let secure = secured.link
        if let certificate = secure.peer.certificate { origins?.admit(certificate) }
        let frames = LinkSyncChannel(secure)
        let channel = AuthenticatedSyncChannel(
            frames, peer: secure.peer, hellos: hellos, resumption: secure.resumption
        )
        var continuation = CodecContinuation()
        if let advertised = secured.advertised, let (ours, theirs) = SyncResumptionHint.of(secure.resumption) {
            continuation = SyncCodecMemory.agreed(advertised, ours: ours.codec, theirs: theirs.codec)
        }
        let session = engine.connect(
            channel, pulling: pulling, permissions: SyncPermissions(secure.peer.permissions), continuing: continuation
        )
        let (codecs, peer) = (self.codecs, secure.peer.peerID)
        let kept = Task {
            await session.waitUntilEnded()
            if let ended = await session.codecContinuation { codecs.save(ended, for: peer) }
        }
        return Connection(
            link: secure, frames: frames, channel: channel, session: session,
            continuedCodec: (continuation.encoding != nil, continuation.decoding != nil), kept: kept
        )
    }

    /// Starts a sync session with `engine` over one conversation of the multiplexer's session
    /// with `peer` (one life of the peer), whose links are `SecureLink`s that authenticated it
    /// (the multiplexer refuses a link whose session hello names anyone else). Permissions are
    /// taken from `peer` as authenticated. The sync session ends when the peer restarts.
    public func connect(
        _ conversation: PeerConversation, authenticatedAs peer: AuthenticatedPeer, to engine: SyncEngine, pulling: Bool = true
    ) -> SyncSession {
        precondition(conversation.peer == peer.peerID, "the mesh session is with \(conversation.peer), not with \(peer)")
        if let certificate = peer.certificate { origins?.admit(certificate) }
        let channel = AuthenticatedSyncChannel(PeerSessionSyncChannel(conversation), peer: peer, hellos: hellos)
        return engine.connect(channel, pulling: pulling, permissions: SyncPermissions(peer.permissions))
    }
}

/// What a handshake's hint advertised, handed from the hint (run inside the handshake) to the link.
private final class AdvertisedCodecs: Sendable {
    let value = Mutex<CodecContinuation?>(nil)
}

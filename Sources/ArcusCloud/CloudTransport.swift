import ArcusMesh
import Synchronization

/// Peers that meet through a NATS relay (`CloudSettings.connection`): a `Transport` of kind
/// `.cloud`. Each transport announces itself on its mesh's presence subject and reads the frames
/// addressed to it on its own link subjects (`CloudSubjects`); a link is a conversation of
/// numbered frames between two peers' subjects (`CloudLink`). The relay sees only the frames'
/// headers and sealed session frames: the mesh's handshake and encryption run over the link
/// like over any other.
///
/// With store-and-forward (JetStream on the relay), link subjects are captured by the mesh's
/// stream and read through it, so frames for a peer that is away wait for it. The NATS client
/// reconnects on its own; the transport announces itself again and its links go on.
///
/// Nothing anyone else publishes on the mesh's subjects counts: announcements are signed by the
/// announcing peer's identity and taken only in their order (`CloudAnnouncement`), link frames
/// carry a tag only the two peers can make (`CloudFrameSeal`); anything else is dropped and
/// counted (`forgeries`). An accepted link waits for its handshake in `pendingHandshakes`, by
/// the dialling peer's id.
///
/// All members may be called from any task.
public final class CloudTransport: Transport {
    public var kind: LinkKind { .cloud }
    public let localEndpoint: TransportEndpoint
    public let events: AsyncStream<TransportEvent>
    public let settings: CloudSettings
    /// The slots accepted links wait for their handshake in, by the dialling peer's id.
    public let pendingHandshakes: PendingHandshakes
    let identity: PeerIdentity
    let peer: PeerID
    /// This run of the transport, so that peers tell a restart from a pause.
    let instance = UInt64.random(in: 1...UInt64.max)
    let subjects: CloudSubjects
    let eventSink: AsyncStream<TransportEvent>.Continuation
    let state = Mutex(State())
    let relayConnection = Mutex<NATSConnection?>(nil)
    let warn: @Sendable (String) -> Void
    let note: @Sendable (String) -> Void

    enum Phase { case idle, running, stopped }

    struct Announced {
        var instance: UInt64
        var lastHeard: ContinuousClock.Instant
        var storesFrames: Bool
        /// The time of the last announcement taken: only later ones are.
        var time: UInt64
        var publicKey: PeerPublicKey
    }

    struct State {
        var phase = Phase.idle
        /// Subscriptions made: this side hears its links and its mesh's presence.
        var online = false
        /// Links are read through the mesh's stream (store-and-forward is on).
        var storing = false
        var warnedNoJetStream = false
        var peers: [PeerID: Announced] = [:]
        /// Peers that said they were leaving, and have not come back since.
        var departed: Set<PeerID> = []
        var everAnnounced: Set<PeerID> = []
        var links: [CloudLinkKey: CloudLink] = [:]
        var dials: [CloudLinkKey: PendingDial] = [:]
        var subscriptions: [NATSSubscription] = []
        var maintenance: Task<Void, Never>?
        var frameErrors = 0
        /// Announcements and frames that were well formed but not the peer's (a bad signature or
        /// tag), or stale (an announcement no later than the last taken).
        var forgeries = 0
        var warnedOlderVersion = false
        var warnedTooManyPeers = false
        /// The time in this peer's last announcement, so that each is later than the one before.
        var lastAnnouncementTime: UInt64 = 0
        /// The key this peer shares with each peer it has links with or heard (`CloudFrameSeal`).
        var pairKeys: [PeerID: [UInt8]] = [:]
        /// The highest link id taken from each dialler, with the run it was taken from.
        var opensTaken: [PeerID: (instance: UInt64, id: UInt64)] = [:]
        var lastMaintenance: ContinuousClock.Instant?
        /// When the relay connection was last up (or the transport started), and whether that
        /// it is down has been said since.
        var lastConnected = ContinuousClock.now
        var warnedOffline = false

        /// How long frames on a link with a peer wait in the stream while one end is away: only
        /// when both ends read their links through it.
        func storedFramesWindow(peerStores: Bool, maximumAge: Duration) -> Duration? {
            storing && peerStores ? maximumAge : nil
        }
    }

    struct PendingDial {
        let continuation: CheckedContinuation<CloudLink, any Error>
        /// Seals this side's frames to the run dialled; its `opening` checks the accept.
        let seal: CloudFrameSeal
        let endpoint: TransportEndpoint
        /// Fails the dial when the peer does not accept in time; cancelled when it ends otherwise.
        var timeout: Task<Void, Never>?

        func end(_ result: Result<CloudLink, any Error>) {
            timeout?.cancel()
            continuation.resume(with: result)
        }
    }

    /// The id of the last link this run dialled: a count, taken under this lock together with
    /// publishing the open, so that a peer receives each dialler's opens in increasing id order
    /// (it takes them in no other; see `CloudFrame`).
    let linkCounter = Mutex<UInt64>(0)

    /// - Parameters:
    ///   - identity: this peer's; it signs the announcements and agrees the keys of link frames.
    ///   - warn: where the transport says what it cannot do (no JetStream on the relay, the
    ///     relay unreachable or refusing), once each time it happens.
    ///   - note: where it says what went well after a warning (connected again).
    public init(
        settings: CloudSettings, identity: PeerIdentity, pendingHandshakes: PendingHandshakes = PendingHandshakes(),
        warn: @escaping @Sendable (String) -> Void = { _ in }, note: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.settings = settings
        self.identity = identity
        self.peer = identity.peerID
        self.pendingHandshakes = pendingHandshakes
        self.subjects = CloudSubjects(meshHash: settings.meshHash)
        self.localEndpoint = TransportEndpoint(kind: .cloud, address: peer.description, peer: peer)
        self.warn = warn
        self.note = note
        (events, eventSink) = AsyncStream.makeStream(of: TransportEvent.self)
    }

    /// Whether links are read through the mesh's JetStream stream (frames wait for a peer away).
    public var storesFrames: Bool { state.withLock { $0.storing } }

    /// Whether the relay connection is up now.
    public var isConnected: Bool { relayConnection.withLock { $0?.isConnected ?? false } }

    /// Frames on this peer's link subjects that were not frames (dropped).
    public var frameErrors: Int { state.withLock { $0.frameErrors } }

    /// Announcements and link frames that were well formed but not from whom they claimed, or
    /// stale (dropped): someone who can publish on the mesh's subjects tried to speak for a peer.
    public var forgeries: Int { state.withLock { $0.forgeries } }

    public func start() async throws {
        let startNow = try state.withLock { state throws(TransportError) -> Bool in
            switch state.phase {
            case .idle: state.phase = .running; return true
            case .running: return false
            case .stopped: throw .alreadyStopped(transport: "cloud")
            }
        }
        guard startNow else { return }
        let connection: NATSConnection
        do {
            connection = try NATSConnection(settings.connection)
        } catch {
            state.withLock { $0.phase = .stopped }
            eventSink.finish()
            throw error
        }
        relayConnection.withLock { $0 = connection }
        reportConnectionChanges(of: connection)
        comeOnlineIfConnected()
        let maintenance = Task { [weak self] in
            while !Task.isCancelled {
                guard let self else { return }
                let interval = self.settings.announceInterval
                self.comeOnlineIfConnected()
                self.warnIfStillOffline()
                self.announce(.here)
                self.expireSilentPeers()
                try? await Task.sleep(for: interval)
            }
        }
        state.withLock { $0.maintenance = maintenance }
    }

    public func stop() async {
        await stop(sayingGoodbye: true)
    }

    /// Stops; without `sayingGoodbye`, as a process that dies would: no "leaving", and no close
    /// for its links (for tests of what peers make of a restart).
    func stop(sayingGoodbye: Bool) async {
        let (wasRunning, links, dials, subscriptions, maintenance) = state.withLock { state in
            defer {
                state.phase = .stopped
                state.links = [:]
                state.dials = [:]
                state.subscriptions = []
                state.maintenance = nil
                state.peers = [:]
            }
            return (state.phase == .running, Array(state.links.values), Array(state.dials.values), state.subscriptions, state.maintenance)
        }
        maintenance?.cancel()
        if wasRunning {
            if sayingGoodbye { announce(.leaving) }
            for link in links { sayingGoodbye ? link.close() : link.lost(because: "this transport died", tellPeer: false) }
            for dial in dials { dial.end(.failure(TransportError.notRunning(transport: "cloud"))) }
            let connection = relayConnection.withLock { $0 }
            try? connection?.flush(within: .seconds(1))
            for subscription in subscriptions { subscription.cancel() }
            connection?.close()
        }
        eventSink.finish()
    }

    public var reachablePeers: [TransportEndpoint] {
        state.withLock { state in state.peers.keys.map(endpoint(of:)) }
    }

    func endpoint(of peer: PeerID) -> TransportEndpoint {
        TransportEndpoint(kind: .cloud, address: peer.description, peer: peer)
    }

    /// The key this peer shares with the holder of `publicKey`, derived once and kept (for at
    /// most `settings.maximumPeers` peers); nil for an unusable key.
    func pairKey(with publicKey: PeerPublicKey) -> [UInt8]? {
        let remote = publicKey.peerID
        if let known = state.withLock({ $0.pairKeys[remote] }) { return known }
        guard let key = CloudFrameSeal.pairKey(identity, with: publicKey, mesh: subjects.mesh) else { return nil }
        state.withLock { state in
            if state.pairKeys.count >= settings.maximumPeers, let any = state.pairKeys.keys.first { state.pairKeys[any] = nil }
            state.pairKeys[remote] = key
        }
        return key
    }

    /// Publishes on a link subject from this peer to `peer`; false when the connection refused.
    func publish(_ frame: [UInt8], to peer: PeerID) -> Bool {
        guard let connection = relayConnection.withLock({ $0 }) else { return false }
        do {
            try connection.publish(subjects.link(to: peer, from: self.peer), frame)
            return true
        } catch {
            return false
        }
    }

    var linkRelay: CloudLinkRelay {
        CloudLinkRelay(
            publish: { [weak self] frame, peer in self?.publish(frame, to: peer) ?? false },
            forget: { [weak self] key in _ = self?.state.withLock { $0.links.removeValue(forKey: key) } }
        )
    }
}

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
/// All members may be called from any task.
public final class CloudTransport: Transport {
    public var kind: LinkKind { .cloud }
    public let localEndpoint: TransportEndpoint
    public let events: AsyncStream<TransportEvent>
    public let settings: CloudSettings
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
        var lastMaintenance: ContinuousClock.Instant?
        /// When the relay connection was last up (or the transport started), and whether that
        /// it is down has been said since.
        var lastConnected = ContinuousClock.now
        var warnedOffline = false
    }

    struct PendingDial {
        let continuation: CheckedContinuation<CloudLink, any Error>
        /// Fails the dial when the peer does not accept in time; cancelled when it ends otherwise.
        var timeout: Task<Void, Never>?

        func end(_ result: Result<CloudLink, any Error>) {
            timeout?.cancel()
            continuation.resume(with: result)
        }
    }

    /// - Parameters:
    ///   - warn: where the transport says what it cannot do (no JetStream on the relay, the
    ///     relay unreachable or refusing), once each time it happens.
    ///   - note: where it says what went well after a warning (connected again).
    public init(
        settings: CloudSettings, peer: PeerID, warn: @escaping @Sendable (String) -> Void = { _ in },
        note: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.settings = settings
        self.peer = peer
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
            announce(.leaving)
            for link in links { link.close() }
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

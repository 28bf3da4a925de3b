import ArcusMesh
import Synchronization

/// The loopback twin of a transport: a member of a `LoopbackNetwork`, named there, that discovers
/// the other members in its range and opens `LoopbackLink`s to them with the network's conditions.
/// Its endpoint's address is its name.
///
/// All members may be called from any task.
public final class LoopbackTransport: Transport {
    public let name: String
    public let network: LoopbackNetwork
    public let localEndpoint: TransportEndpoint
    public let events: AsyncStream<TransportEvent>
    private let eventSink: AsyncStream<TransportEvent>.Continuation
    private let phase = Mutex(Phase.idle)

    private enum Phase { case idle, running, stopped }

    /// A transport named `name` on `network`, advertising `peer` if given. Names are unique among
    /// the running transports of a network; a stopped one's name may be taken by a new transport,
    /// as a restarted peer would.
    public init(name: String, peer: PeerID? = nil, on network: LoopbackNetwork) {
        self.name = name
        self.network = network
        self.localEndpoint = TransportEndpoint(kind: network.kind, address: name, peer: peer)
        (events, eventSink) = AsyncStream.makeStream(of: TransportEvent.self)
    }

    public var kind: LinkKind { network.kind }

    public func start() async throws {
        let wasIdle = try phase.withLock { phase throws(TransportError) -> Bool in
            switch phase {
            case .idle: phase = .running; return true
            case .running: return false
            case .stopped: throw .alreadyStopped(transport: "\(kind.rawValue) loopback \(name)")
            }
        }
        if wasIdle { network.join(localEndpoint, events: eventSink) }
    }

    public func stop() async {
        let wasRunning = phase.withLock { phase in
            defer { phase = .stopped }
            return phase == .running
        }
        if wasRunning { network.leave(name) }
        eventSink.finish()
    }

    public func open(to endpoint: TransportEndpoint) async throws -> any Link {
        try network.open(from: name, to: endpoint)
    }

    public var reachablePeers: [TransportEndpoint] { network.reachable(from: name) }
}

import ArcusMesh
import NIOCore
import NIOPosix
import Synchronization

/// LAN peers over TCP: listens on a host and port, dials the endpoints its discovery sources
/// announce (or any `host:port`), and makes each connection a `LANLink`.
///
/// Every connection starts with the dialler's `LANHello`, so that an accepted link is announced
/// with the endpoint the dialler listens on, as its peers know it. Peers come from the
/// `LANDiscovery` sources given at init: `StaticPeers`, mDNS, a test's directory.
///
/// An accepted connection first needs a slot in `pendingHandshakes`, by the remote IP address;
/// without one it is closed in the accept, before it has a pipeline, a buffer or a task. Its
/// hello must come before the slot's deadline, which the handshake after it shares.
///
/// A transport runs once; `stop()` it to close its listener and links and end its discovery.
/// All members may be called from any task.
public final class LANTransport: Transport {
    /// Where the transport listens; port 0 lets the system choose (see `localEndpoint`).
    public let listenAddress: LANAddress
    /// The id sent in every hello this transport's dials begin with, and in its endpoint.
    public let peer: PeerID?
    public let discovery: [any LANDiscovery]
    public let limits: LANLinkLimits
    /// The slots accepted connections wait for their hello and handshake in.
    public let pendingHandshakes: PendingHandshakes
    public let events: AsyncStream<TransportEvent>
    private let eventSink: AsyncStream<TransportEvent>.Continuation
    private let group: any EventLoopGroup
    private let state = Mutex(State())

    private enum Phase { case idle, starting, running, stopped }

    private struct State {
        var phase = Phase.idle
        var boundPort: Int?
        var listener: (any Channel)?
        var links: [ObjectIdentifier: LANLink] = [:]
        var reachable: [TransportEndpoint] = []
        var discoveryTasks: [Task<Void, Never>] = []
    }

    /// A transport that will listen on `address` (`0.0.0.0` and port 0 by default: every
    /// interface, a port the system chooses) and find peers through `discovery`.
    public init(
        listeningOn address: LANAddress = LANAddress(host: "0.0.0.0", port: 0),
        peer: PeerID? = nil,
        discovery: [any LANDiscovery] = [],
        limits: LANLinkLimits = LANLinkLimits(),
        pendingHandshakes: PendingHandshakes = PendingHandshakes(),
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) {
        self.listenAddress = address
        self.pendingHandshakes = pendingHandshakes
        self.peer = peer
        self.discovery = discovery
        self.limits = limits
        self.group = group
        (events, eventSink) = AsyncStream.makeStream(of: TransportEvent.self)
    }

    public var kind: LinkKind { .lan }

    /// The listening host and, once started, the port actually bound.
    public var localEndpoint: TransportEndpoint {
        let port = state.withLock { $0.boundPort } ?? listenAddress.port
        return TransportEndpoint(kind: .lan, address: LANAddress(host: listenAddress.host, port: port).description, peer: peer)
    }

    public var reachablePeers: [TransportEndpoint] {
        get async { state.withLock { $0.reachable } }
    }

    private var name: String { "lan \(listenAddress)" }

    // MARK: Running

    /// Binds the listener, then starts the discovery sources. Throws `LANListenError` if the
    /// address cannot be bound (the transport may then be started again).
    public func start() async throws {
        let starts = try state.withLock { state throws(TransportError) -> Bool in
            switch state.phase {
            case .idle: state.phase = .starting; return true
            case .starting, .running: return false
            case .stopped: throw .alreadyStopped(transport: name)
            }
        }
        guard starts else { return }

        let listener: NIOAsyncChannel<LANConnection, Never>
        do {
            listener = try await ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: 256)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                // Accepted sockets inherit it, and the window they offer follows from it.
                .serverChannelOption(.socketOption(.so_rcvbuf), value: limits.socketBufferBytes)
                .bind(host: listenAddress.host, port: listenAddress.port) { [limits, pendingHandshakes] channel in
                    // Before anything is spent on the connection: over the cap, it is closed here.
                    // (NIO drops a connection whose initializer fails without closing it.)
                    let source = channel.remoteAddress.map(LANTransport.source(of:)) ?? "unknown"
                    guard let pending = pendingHandshakes.admit(.lan, from: source) else {
                        channel.close(promise: nil)
                        return channel.eventLoop.makeFailedFuture(LANLinkFailure.refused(source: source))
                    }
                    return channel.eventLoop.makeCompletedFuture {
                        do {
                            return try LANConnection.configure(channel, limits: limits, pending: pending)
                        } catch {
                            pending.settle(.failed)
                            throw error
                        }
                    }
                }
        } catch {
            state.withLock { if $0.phase == .starting { $0.phase = .idle } }
            throw LANListenError(address: listenAddress, reason: String(describing: error))
        }

        let running = state.withLock { state -> Bool in
            guard state.phase == .starting else { return false }
            state.phase = .running
            state.boundPort = listener.channel.localAddress?.port
            state.listener = listener.channel
            return true
        }
        guard running else {
            try? await listener.channel.close()
            throw TransportError.alreadyStopped(transport: name)
        }
        Task { await accept(from: listener) }

        let local = localEndpoint
        let tasks = discovery.map { source in
            Task { for await event in source.peers(advertising: local) { discovered(event) } }
        }
        let stoppedMeanwhile = state.withLock { state -> Bool in
            state.discoveryTasks = tasks
            return state.phase == .stopped
        }
        if stoppedMeanwhile { tasks.forEach { $0.cancel() } }
    }

    public func stop() async {
        let (listener, links, tasks) = state.withLock { state in
            defer { state = State(phase: .stopped, boundPort: state.boundPort) }
            return (state.listener, Array(state.links.values), state.discoveryTasks)
        }
        for task in tasks { task.cancel() }
        try? await listener?.close()
        for link in links {
            link.close()
            try? await link.closed.get()
        }
        eventSink.finish()
    }

    // MARK: Discovery

    /// Announces what a source found, once per address, in the order found.
    private func discovered(_ event: LANDiscoveryEvent) {
        let local = localEndpoint.address
        state.withLock { state in
            guard state.phase == .running else { return }
            switch event {
            case .appeared(let endpoint):
                guard endpoint.kind == .lan, endpoint.address != local,
                      !state.reachable.contains(where: { $0.address == endpoint.address }) else { return }
                state.reachable.append(endpoint)
                eventSink.yield(.peerAppeared(endpoint))
            case .lost(let endpoint):
                guard let index = state.reachable.firstIndex(where: { $0.address == endpoint.address }) else { return }
                eventSink.yield(.peerLost(state.reachable.remove(at: index)))
            }
        }
    }

    // MARK: Links

    public func open(to endpoint: TransportEndpoint) async throws -> any Link {
        guard endpoint.kind == .lan else { throw TransportError.wrongKind(endpoint, expected: .lan) }
        guard let port = state.withLock({ $0.phase == .running ? $0.boundPort : nil }) else {
            throw TransportError.notRunning(transport: name)
        }
        guard let address = try? LANAddress(parsing: endpoint.address) else { throw TransportError.unknownEndpoint(endpoint) }

        let connection: LANConnection
        do {
            connection = try await ClientBootstrap(group: group)
                .connectTimeout(TimeAmount(limits.connectTimeout))
                .connect(host: address.host, port: address.port) { [limits] channel in
                    channel.eventLoop.makeCompletedFuture { try LANConnection.configure(channel, limits: limits) }
                }
        } catch {
            // Refused, timed out, no route, no such host: nobody answers there now.
            throw TransportError.unreachable(endpoint)
        }
        let link = LANLink(await connection.open(), remote: endpoint, mtu: limits.mtu, accepted: false)
        guard adopt(link) else { throw TransportError.notRunning(transport: name) }
        do {
            try await link.send(LANHello(listeningPort: UInt16(port), peer: peer).encoded)
        } catch {
            link.close()
            throw TransportError.unreachable(endpoint)
        }
        return link
    }

    /// Accepts connections until the listener closes, each introducing itself on its own. Those
    /// still silent when it closes (the transport stopping) are dropped rather than waited for.
    private func accept(from listener: NIOAsyncChannel<LANConnection, Never>) async {
        try? await listener.executeThenClose { connections in
            try await withThrowingDiscardingTaskGroup { group in
                for try await connection in connections {
                    group.addTask { await self.welcome(connection) }
                }
                group.cancelAll()
            }
        }
    }

    /// Reads an accepted connection's hello and announces its link, or closes a connection that
    /// does not introduce itself before its pending slot's deadline.
    private func welcome(_ connection: LANConnection) async {
        // Every accepted connection has a slot: the listener's initializer gave it one.
        guard let pending = connection.pending else { return }
        let ends = await connection.open()
        let timedOut = LANFailureRecord()
        let timeout = ends.channel.eventLoop.scheduleTask(in: TimeAmount(pending.remaining)) {
            let failure = LANLinkFailure.noHello("none came within \(self.pendingHandshakes.limits.lanDeadline)")
            timedOut.record(failure)
            ends.failure.record(failure)
            ends.channel.close(promise: nil)
        }
        let first = await ends.frames.next()
        timeout.cancel()
        guard let first else {
            // Closed by the peer or the timeout, or the transport is stopping.
            pending.settle(timedOut.value == nil ? .failed : .timedOut)
            ends.channel.close(promise: nil)
            return
        }
        let hello: LANHello
        do {
            hello = try LANHello(decoding: first)
        } catch {
            pending.settle(.failed)
            ends.failure.record(error)
            ends.channel.close(promise: nil)
            return
        }
        let host = ends.channel.remoteAddress?.ipAddress ?? "unknown"
        let from = TransportEndpoint(kind: .lan, address: LANAddress(host: host, port: Int(hello.listeningPort)).description, peer: hello.peer)
        let link = LANLink(ends, remote: from, mtu: limits.mtu, accepted: true)
        guard adopt(link) else {
            pending.settle(.failed)
            return
        }
        eventSink.yield(.linkAccepted(link, from: from, pending: pending))
    }

    /// Keeps `link` until it closes, so that `stop()` can close it; closes it at once if the
    /// transport is no longer running.
    private func adopt(_ link: LANLink) -> Bool {
        let running = state.withLock { state -> Bool in
            guard state.phase == .running else { return false }
            state.links[ObjectIdentifier(link)] = link
            return true
        }
        guard running else {
            link.close()
            return false
        }
        link.closed.whenComplete { [weak self] _ in
            _ = self?.state.withLock { $0.links.removeValue(forKey: ObjectIdentifier(link)) }
        }
        return true
    }
}

extension LANTransport {
    /// The source a connection from `address` counts against in `PendingHandshakes`: an IPv4
    /// address (also when it comes IPv4-mapped, on a dual-stack listener), or an IPv6 address's
    /// /64 prefix — one host usually holds a whole /64 and may pick any address in it.
    static func source(of address: SocketAddress) -> String {
        guard case .v6(let v6) = address else { return address.ipAddress ?? "unknown" }
        let bytes = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return bytes[12...].map(String.init).joined(separator: ".")
        }
        let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "::/64"
    }
}

extension TimeAmount {
    fileprivate init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}

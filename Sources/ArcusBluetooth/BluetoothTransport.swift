import ArcusMesh
import Foundation
import Glibc
import Synchronization

/// Bluetooth LE peers: each advertises its id and mesh, scans for others, and links are L2CAP
/// LE credit-based channels (`SeqPacketLink`s), one message per SDU.
///
/// The radio is chosen at init. On the emulated radio (see `EmulatedRadioSettings`) a peer
/// listens on DIR/peers/<id>.sock, advertises by rewriting DIR/adverts/<id> every second and
/// scans DIR/adverts; DIR/topology.json says who hears whom (`EmulatedTopology`), and a link
/// between peers that stop hearing each other is severed. Only AF_UNIX sockets are used. The
/// endpoint address of a peer is its id in hex.
///
/// On the L2CAP radio an endpoint is where a peer listens, "AA:BB:CC:DD:EE:FF/public/0x81" (its
/// controller's address and its PSM), with the 4-byte id prefix its advert carries; a dialler's
/// hello names its PSM, so that an accepted link comes from the endpoint its adverts announce.
///
/// A transport runs once; `stop()` it to withdraw its advert, close its listener and its links.
public final class BluetoothTransport: Transport {
    public let radio: BluetoothRadio
    public let peer: PeerID
    /// The hash of the mesh this peer belongs to, advertised so that scanners can skip others.
    public let meshHash: String
    /// The slots accepted channels wait for their hello and handshake in, by remote device (on
    /// the emulated radio, by connecting process).
    public let pendingHandshakes: PendingHandshakes
    public let events: AsyncStream<TransportEvent>
    /// What a person should hear about the radio as it runs: a controller powered off or back,
    /// discovery refused. The agent logs it.
    private let report: @Sendable (String) -> Void
    private let eventSink: AsyncStream<TransportEvent>.Continuation
    private let state = Mutex(State())

    private enum Phase { case idle, running, stopped }

    private struct State {
        var phase = Phase.idle
        var listener: SeqPacketListener?
        /// Every open link, with its peer where the emulated topology must check it.
        var links: [ObjectIdentifier: (link: SeqPacketLink, remote: PeerID?)] = [:]
        var discovery: BlueZDiscovery?
        var reachable: [PeerID: TransportEndpoint] = [:]
        /// Peers ever heard, to tell a stopped peer from an address nobody ever used.
        var heard: Set<PeerID> = []
        /// On the L2CAP radio: this peer's endpoint once it listens, and the peers discovery
        /// announced and has not lost (by address), and the addresses it announced before.
        var l2capEndpoint: TransportEndpoint?
        var l2capPSM: UInt16?
        var found: [String: TransportEndpoint] = [:]
        var everFound = RememberedAddresses()
        var topology = EmulatedTopology.everyoneHearsEveryone
        /// On the emulated radio: the signal of each peer heard at the last scan, as the
        /// topology gives it.
        var signal: [PeerID: Int8] = [:]
        var tasks: [Task<Void, Never>] = []
    }

    public init(
        radio: BluetoothRadio, peer: PeerID, meshHash: String = "", pendingHandshakes: PendingHandshakes = PendingHandshakes(),
        report: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.radio = radio
        self.report = report
        self.peer = peer
        self.meshHash = meshHash
        self.pendingHandshakes = pendingHandshakes
        (events, eventSink) = AsyncStream.makeStream(of: TransportEvent.self)
    }

    public var kind: LinkKind { .bluetooth }

    public var localEndpoint: TransportEndpoint { state.withLock { $0.l2capEndpoint } ?? Self.endpoint(of: peer) }

    public var reachablePeers: [TransportEndpoint] {
        get async { state.withLock { Array($0.reachable.values) + Array($0.found.values) } }
    }

    private var name: String { "bluetooth \(peer)" }

    /// How long a dial waits for discovery to hear a peer it has not heard yet.
    static let hearingWait: Duration = .seconds(5)

    /// The RSSI, in dBm, at which this radio last heard `remote`'s adverts (within the time
    /// after which a silent peer counts as gone), as the adapter reports it; nil when it was not
    /// heard or the adapter gave no figure. Adverts carry a 4-byte prefix of the peer's id, so
    /// two peers of one mesh sharing a prefix would share a figure.
    public func signalStrength(of remote: PeerID) -> Int8? {
        state.withLock { state in
            switch radio {
            case .emulated: return state.signal[remote]
            case .l2cap: return state.discovery?.signalStrengths[Array(remote.bytes.prefix(4))]
            }
        }
    }

    private static func endpoint(of peer: PeerID) -> TransportEndpoint {
        TransportEndpoint(kind: .bluetooth, address: peer.description, peer: peer)
    }

    // MARK: Running

    /// Starts listening, advertising and scanning. On the L2CAP radio this throws
    /// `BluetoothUnavailable` (with what to do) where the machine has no usable Bluetooth or the
    /// process lacks the capabilities, `BluetoothNotReady` for an adapter that is off, and the
    /// `ManagementError` of a command the kernel refused.
    public func start() async throws {
        let starts = try state.withLock { state throws(TransportError) -> Bool in
            switch state.phase {
            case .idle: return true
            case .running: return false
            case .stopped: throw .alreadyStopped(transport: name)
            }
        }
        guard starts else { return }
        switch radio {
        case .l2cap(let settings): try await startL2CAP(settings)
        case .emulated(let settings): try startEmulated(settings)
        }
    }

    public func stop() async {
        let (listener, links, tasks, wasRunning, discovery) = state.withLock { state in
            defer {
                state.phase = .stopped
                state.discovery = nil
                state.listener = nil
                state.links = [:]
                state.tasks = []
                state.reachable = [:]
                state.found = [:]
            }
            return (state.listener, Array(state.links.values), state.tasks, state.phase == .running, state.discovery)
        }
        await discovery?.stop()
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
        listener?.close()
        if wasRunning, case .emulated(let settings) = radio {
            // Withdraw the advert and the socket: scanners lose this peer at their next scan.
            try? FileManager.default.removeItem(atPath: settings.advertPath(of: peer.description))
            try? FileManager.default.removeItem(atPath: settings.socketPath(of: peer.description))
        }
        for (link, _) in links { link.close() }
        eventSink.finish()
    }

    public func open(to endpoint: TransportEndpoint) async throws -> any Link {
        guard state.withLock({ $0.phase == .running }) else { throw TransportError.notRunning(transport: name) }
        guard endpoint.kind == .bluetooth else { throw TransportError.wrongKind(endpoint, expected: .bluetooth) }
        switch radio {
        case .l2cap(let settings): return try await dialL2CAP(endpoint, settings)
        case .emulated(let settings):
            try await Task.sleep(for: settings.connectionSetup)
            return try dialEmulated(endpoint, settings)
        }
    }

    // MARK: The L2CAP radio

    /// Picks the controller, listens on it (on a dynamic PSM unless one is configured), then
    /// advertises the PSM and scans through the kernel's management socket (`BlueZDiscovery`).
    /// Accepted channels go through the same hello as emulated ones.
    private func startL2CAP(_ settings: L2CAPRadioSettings) async throws {
        let management = try SeqPacketLink(
            socket: try SeqPacketSocket.management(), mtu: 4096, description: "bluetooth management", refusedSendEndsLink: false
        )
        let client = ManagementClient(link: management)
        let controller: BlueZDiscovery.Controller
        let listener: SeqPacketListener
        let psm: UInt16
        do {
            controller = try await BlueZDiscovery.controller(settings.adapter, client: client)
            var address = controller.address
            address.psm = settings.psm
            let socket = try SeqPacketSocket.l2capListener(on: address, receiveMTU: settings.receiveMTU, security: settings.security)
            do {
                psm = try socket.boundL2CAPAddress().psm
                listener = try SeqPacketListener(listening: socket)
            } catch {
                socket.close()
                throw error
            }
        } catch {
            await client.close()
            throw error
        }
        let discovery = BlueZDiscovery(client: client, controller: controller, psm: UInt8(psm), peer: peer, meshHash: meshHash, report: report)
        do {
            try await discovery.start { [weak self] change in self?.discovered(change) }
        } catch {
            listener.close()
            await discovery.stop()
            throw error
        }
        var listening = controller.address
        listening.psm = psm
        let endpoint = TransportEndpoint(kind: .bluetooth, address: BlueZDiscovery.address(listening), peerPrefix: Array(peer.bytes.prefix(4)))
        state.withLock { state in
            state.phase = .running
            state.listener = listener
            state.discovery = discovery
            state.l2capEndpoint = endpoint
            state.l2capPSM = psm
        }
        listener.start { [weak self] accepted in
            // Over the cap, closed here: no thread is started for it.
            guard let self, let pending = self.pendingHandshakes.admit(.bluetooth, from: accepted.remoteSource) else { return accepted.close() }
            Thread { self.acceptL2CAP(accepted, settings, pending: pending) }.start()
        }
    }

    /// The controller this transport runs on, once started on an adapter.
    public var controller: BlueZDiscovery.Controller? { state.withLock { $0.discovery?.controller } }

    private func discovered(_ change: BlueZDiscovery.Change) {
        state.withLock { state in
            guard state.phase == .running else { return }
            switch change {
            case .appeared(let found):
                let endpoint = TransportEndpoint(kind: .bluetooth, address: found.address, peerPrefix: found.advertisement.peerPrefix)
                state.found[found.address] = endpoint
                state.everFound.insert(found.address)
                eventSink.yield(.peerAppeared(endpoint))
            case .lost(let found):
                guard let endpoint = state.found.removeValue(forKey: found.address) else { return }
                eventSink.yield(.peerLost(endpoint))
            }
        }
    }

    /// Connects an L2CAP LE channel from this transport's controller to the endpoint's address
    /// and PSM (off the cooperative pool: an LE connection takes its time), then says hello.
    /// Discovery pauses meanwhile: the kernel connects only once it has stopped. Only peers
    /// discovery hears are dialled: a connection to a device that does not advertise waits out
    /// the whole connect timeout. A peer not heard yet (dialled as soon as this transport
    /// started) is given `hearingWait` to be; one lost since it was heard is refused at once.
    private func dialL2CAP(_ endpoint: TransportEndpoint, _ settings: L2CAPRadioSettings) async throws -> any Link {
        guard let address = BlueZDiscovery.parse(endpoint.address) else { throw TransportError.unknownEndpoint(endpoint) }
        let (discovery, psm) = try await heard(endpoint)
        let hello = LinkHello(peer: peer, psm: psm).encoded
        let local = discovery.controller.address
        await discovery.dialStarts()
        defer { discovery.dialEnded() }
        let socket = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<SeqPacketSocket, any Error>) in
            Thread {
                do {
                    let socket = try SeqPacketSocket.l2capConnection(
                        from: local, to: address, receiveMTU: settings.receiveMTU, security: settings.security, timeout: settings.connectTimeout
                    )
                    do {
                        guard try socket.sendWithoutBlocking(hello) else { throw TransportError.unreachable(endpoint) }
                    } catch {
                        socket.close()
                        throw error
                    }
                    continuation.resume(returning: socket)
                } catch {
                    continuation.resume(throwing: error)
                }
            }.start()
        }
        return try track(socket, remote: nil, mtu: try socket.sendMTU(), phy: nil, description: "bluetooth l2cap \(self.peer) -> \(endpoint.address)")
    }

    /// The discovery and this transport's PSM, once `endpoint` is heard (see `dialL2CAP`).
    private func heard(_ endpoint: TransportEndpoint) async throws -> (discovery: BlueZDiscovery, psm: UInt16?) {
        let deadline = ContinuousClock.now + Self.hearingWait
        while true {
            let (discovery, now, ever, psm) = state.withLock {
                ($0.discovery, $0.found[endpoint.address] != nil, $0.everFound.contains(endpoint.address), $0.l2capPSM)
            }
            guard let discovery else { throw TransportError.notRunning(transport: name) }
            if now { return (discovery, psm) }
            if ever { throw TransportError.peerStopped(endpoint) }
            guard ContinuousClock.now < deadline else { throw TransportError.unknownEndpoint(endpoint) }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// An accepted L2CAP channel: its hello names the dialler (the session handshake proves it)
    /// and the PSM it listens on, which with the remote device's address makes the endpoint its
    /// adverts announce. The hello must come within the time its pending slot has left.
    private func acceptL2CAP(_ socket: SeqPacketSocket, _ settings: L2CAPRadioSettings, pending: PendingHandshake) {
        guard let hello = LinkHello.read(from: socket, milliseconds: pending.remainingMilliseconds),
              state.withLock({ $0.phase == .running }),
              let mtu = try? socket.sendMTU(),
              let link = try? track(socket, remote: nil, mtu: mtu, phy: nil, description: "bluetooth l2cap \(peer) <- \(hello.peer)")
        else {
            pending.settle(pending.remaining == .zero ? .timedOut : .failed)
            socket.close()
            return
        }
        let announced = state.withLock { state in
            guard state.phase == .running else { return false }
            eventSink.yield(.linkAccepted(link, from: Self.dialler(hello, on: socket), pending: pending))
            return true
        }
        if !announced {
            pending.settle(.failed)
            link.close()
        }
    }

    /// Where the dialler of an accepted channel listens; a hello without its PSM (an older
    /// agent) gives the dialler's id instead.
    private static func dialler(_ hello: LinkHello, on socket: SeqPacketSocket) -> TransportEndpoint {
        guard let psm = hello.psm, L2CAPAddress.dynamicPSMs.contains(psm), var address = try? socket.remoteL2CAPAddress() else {
            return TransportEndpoint(kind: .bluetooth, address: hello.peer.description, peer: hello.peer)
        }
        address.psm = psm
        return TransportEndpoint(kind: .bluetooth, address: BlueZDiscovery.address(address), peer: hello.peer)
    }

    // MARK: The emulated radio

    private func startEmulated(_ settings: EmulatedRadioSettings) throws {
        let path = try UnixSocketPath(settings.socketPath(of: peer.description))
        for directory in [settings.peersDirectory, settings.advertsDirectory] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        // A socket file left by a process that died would make bind fail with EADDRINUSE.
        try? FileManager.default.removeItem(atPath: path.path)
        let socket = try SeqPacketSocket.unix()
        try socket.bind(path)
        try socket.listen()
        let listener = try SeqPacketListener(listening: socket)
        let topology = EmulatedTopology.read(settings.topologyPath, previous: .everyoneHearsEveryone)
        state.withLock { state in
            state.phase = .running
            state.listener = listener
            state.topology = topology
        }
        listener.start { [weak self] accepted in
            // Off the listener's thread: a dialler slow to say hello must not hold up the others.
            // Over the cap, closed here: no thread is started for it.
            guard let self, let pending = self.pendingHandshakes.admit(.bluetooth, from: accepted.remoteSource) else { return accepted.close() }
            Thread { self.accept(accepted, settings, pending: pending) }.start()
        }
        try advert(settings).write(to: settings.advertPath(of: peer.description))
        scan(settings)

        let advertising = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: EmulatedAdvert.interval)
                guard let self, !Task.isCancelled else { return }
                try? self.advert(settings).write(to: settings.advertPath(of: self.peer.description))
            }
        }
        let scanning = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: settings.scanInterval)
                guard let self, !Task.isCancelled else { return }
                self.scan(settings)
            }
        }
        state.withLock { $0.tasks += [advertising, scanning] }
    }

    private func advert(_ settings: EmulatedRadioSettings) -> EmulatedAdvert {
        EmulatedAdvert(
            peer: peer.description, mesh: meshHash, socket: settings.socketPath(of: peer.description),
            time: Date().timeIntervalSince1970
        )
    }

    /// One scan: re-reads the topology (severing links now out of range), then the adverts,
    /// and announces the peers that came and went.
    private func scan(_ settings: EmulatedRadioSettings) {
        let previous = state.withLock { $0.topology }
        let topology = EmulatedTopology.read(settings.topologyPath, previous: previous)
        let now = Date().timeIntervalSince1970
        var heard: Set<PeerID> = []
        let names = (try? FileManager.default.contentsOfDirectory(atPath: settings.advertsDirectory)) ?? []
        for name in names where name != peer.description {
            // Dials go to the socket named after the id, never to a path an advert names: an
            // advert whose file name, id and socket disagree is not a peer's.
            guard let advert = EmulatedAdvert.read(settings.advertPath(of: name)), let remote = advert.peerID,
                  remote.description == name, advert.socket == settings.socketPath(of: name),
                  advert.mesh == meshHash, advert.isFresh(now: now), topology.hears(peer, remote)
            else { continue }
            heard.insert(remote)
        }
        let severed = state.withLock { state -> [SeqPacketLink] in
            guard state.phase == .running else { return [] }
            state.topology = topology
            state.signal = Dictionary(uniqueKeysWithValues: heard.compactMap { remote in topology.signal(peer, remote).map { (remote, $0) } })
            for lost in state.reachable.keys where !heard.contains(lost) {
                eventSink.yield(.peerLost(Self.endpoint(of: lost)))
                state.reachable[lost] = nil
            }
            for remote in heard.sorted() where state.reachable[remote] == nil {
                state.reachable[remote] = Self.endpoint(of: remote)
                state.heard.insert(remote)
                eventSink.yield(.peerAppeared(Self.endpoint(of: remote)))
            }
            return state.links.values.filter { $0.remote.map { !topology.inRange(peer, $0) } ?? false }.map(\.link)
        }
        for link in severed { link.close() }
    }

    private func dialEmulated(_ endpoint: TransportEndpoint, _ settings: EmulatedRadioSettings) throws -> any Link {
        guard let remote = Hex.decode(endpoint.address).flatMap({ PeerID(bytes: $0) }) else {
            throw TransportError.unknownEndpoint(endpoint)
        }
        let (cached, everHeard) = state.withLock { ($0.topology, $0.heard.contains(remote)) }
        // Read afresh: a dial must not get through in the half second before the next scan.
        let topology = EmulatedTopology.read(settings.topologyPath, previous: cached)
        let path = settings.socketPath(of: remote.description)
        guard FileManager.default.fileExists(atPath: path) else {
            throw everHeard ? TransportError.peerStopped(endpoint) : TransportError.unknownEndpoint(endpoint)
        }
        guard topology.inRange(peer, remote) else { throw TransportError.unreachable(endpoint) }
        let socket = try SeqPacketSocket.unix()
        do {
            try socket.connect(try UnixSocketPath(path))
            guard try socket.sendWithoutBlocking(LinkHello(peer: peer).encoded) else { throw TransportError.unreachable(endpoint) }
        } catch let error as SocketError {
            // ECONNREFUSED: the file is there but nobody listens (the peer died).
            if error.errno == ECONNREFUSED || error.errno == ENOENT { throw TransportError.peerStopped(endpoint) }
            throw error
        }
        return try track(socket, remote: remote, settings)
    }

    /// An accepted channel: the dialler's hello says who it is; one out of range, or malformed,
    /// is closed unannounced.
    private func accept(_ socket: SeqPacketSocket, _ settings: EmulatedRadioSettings, pending: PendingHandshake) {
        let topology = EmulatedTopology.read(settings.topologyPath, previous: state.withLock { $0.topology })
        guard let remote = LinkHello.read(from: socket, milliseconds: pending.remainingMilliseconds)?.peer, topology.inRange(peer, remote),
              state.withLock({ $0.phase == .running })
        else {
            pending.settle(pending.remaining == .zero ? .timedOut : .failed)
            socket.close()
            return
        }
        guard let link = try? track(socket, remote: remote, settings) else {
            pending.settle(.failed)
            return
        }
        let announced = state.withLock { state in
            guard state.phase == .running else { return false }
            eventSink.yield(.linkAccepted(link, from: Self.endpoint(of: remote), pending: pending))
            return true
        }
        if !announced {
            pending.settle(.failed)
            link.close()
        }
    }

    /// Makes `socket` a link that the transport closes when it stops, and forgets once closed.
    /// On failure the socket is closed (by the link, once it has one).
    private func track(_ socket: SeqPacketSocket, remote: PeerID, _ settings: EmulatedRadioSettings) throws -> SeqPacketLink {
        do {
            try socket.setSendBuffer(bytes: EmulatedLinkPair.sendBuffer(mtu: settings.mtu))
        } catch {
            socket.close()
            throw error
        }
        return try track(socket, remote: remote, mtu: settings.mtu, phy: settings.phy, description: "bluetooth emulated \(peer) <-> \(remote)")
    }

    /// Makes `socket` a link that the transport closes when it stops, and forgets once closed;
    /// `remote`, when known, is checked against the emulated topology at each scan. On failure
    /// the socket is closed (by the link, once it has one).
    private func track(_ socket: SeqPacketSocket, remote: PeerID?, mtu: Int, phy: EmulatedPHY?, description: String) throws -> SeqPacketLink {
        let link: SeqPacketLink
        do {
            link = try SeqPacketLink(socket: socket, mtu: min(mtu, SeqPacketLink.maximumMTU), description: description, phy: phy)
        } catch {
            socket.close()
            throw error
        }
        let id = ObjectIdentifier(link)
        let kept = state.withLock { state in
            guard state.phase == .running else { return false }
            state.links[id] = (link, remote)
            return true
        }
        guard kept else {
            link.close()
            throw TransportError.notRunning(transport: name)
        }
        link.onClose { [weak self] in self?.state.withLock { _ = $0.links.removeValue(forKey: id) } }
        return link
    }
}

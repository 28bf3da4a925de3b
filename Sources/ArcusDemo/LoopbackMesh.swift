import ArcusAgent
import ArcusCRDT
import ArcusLoopback
import ArcusMesh
import ArcusStore
import ArcusSync
import Foundation
import Synchronization

/// A whole mesh in one process: a store and a sync engine per peer, linked by loopback links
/// or emulated Bluetooth channels (`DemoLinks`) as a `Topology` says. Links can be dropped and made again while the engines run, as radios
/// go in and out of range; a new link starts new sessions, which resume where the last ones
/// stopped.
///
/// With `secret`, every peer gets an identity and every link goes through the mesh handshake
/// (shared-secret mode) before its sync sessions start, which then run sealed (`SecureConnector`).
public final class LoopbackMesh: Sendable {
    public struct Peer: Sendable {
        public let index: Int
        public let name: String
        public let store: Store
        public let engine: SyncEngine
    }

    public let peers: [Peer]
    public let topology: Topology
    public let links: DemoLinks
    /// Each peer's part in handshakes, when the mesh is secure.
    public let connectors: [SecureConnector]?

    private struct Wire {
        let a: any Link, b: any Link
        let sever: @Sendable (Duration) -> Void
    }

    private struct State {
        /// The link each topology link has now, if it is up.
        var wires: [Topology.Link: Wire] = [:]
        /// Bytes each peer has put on its links and taken from them, over every link it has had.
        var sent: [Int]
        var received: [Int]
        var linksMade = 0
        /// Every sync channel a peer has had, for its frame counts.
        var channels: [[LinkSyncChannel]]
        /// Handshakes that failed (a link dropped during one; never a wrong secret here).
        var refused = 0
        var stopped = false
    }

    private let state: Mutex<State>

    /// Makes the peers (`makeStore(options)` gives each its store, with the options that name its
    /// site in a secure mesh) and their engines; nothing is linked until `connect`.
    public init(
        topology: Topology, links: DemoLinks, options: SyncEngine.Options = SyncEngine.Options(),
        secret: MeshSecret? = nil, makeStore: (Store.Options) throws -> Store
    ) throws {
        self.topology = topology
        self.links = links
        connectors = secret.map { secret in
            (0..<topology.peerCount).map { _ in SecureConnector(identity: PeerIdentity(), credential: .sharedSecret(secret)) }
        }
        var peers: [Peer] = []
        for index in 0..<topology.peerCount {
            var peerOptions = options
            peerOptions.name = "peer-\(index)"
            var storeOptions = Store.Options()
            // A secure peer's store writes under the site its key names, as an agent's does.
            storeOptions.site = connectors.map { SiteID(peer: $0[index].handshake.identity.peerID) }
            let store = try makeStore(storeOptions)
            peers.append(Peer(index: index, name: peerOptions.name, store: store, engine: try SyncEngine(store: store, options: peerOptions)))
        }
        self.peers = peers
        let count = topology.peerCount
        state = Mutex(State(sent: Array(repeating: 0, count: count), received: Array(repeating: 0, count: count), channels: Array(repeating: [], count: count)))
    }

    /// Brings up every link of the topology that is down.
    public func connectAll() {
        for link in topology.links { connect(link) }
    }

    /// Brings up one link (if it is down): a fresh pair and a sync session at each end — in a
    /// secure mesh, once the handshake (peer `link.a` dials) has let both ends in. A pair that
    /// cannot be made (the emulated radio out of descriptors) leaves the link down.
    public func connect(_ link: Topology.Link) {
        let made: Wire? = state.withLock { state in
            guard !state.stopped, state.wires[link] == nil,
                  let pair = try? links.pair(name: "\(peers[link.a].name)-\(peers[link.b].name)") else { return nil }
            let wire = Wire(a: counted(pair.a, peer: link.a), b: counted(pair.b, peer: link.b), sever: pair.sever)
            state.wires[link] = wire
            state.linksMade += 1
            return wire
        }
        guard let made else { return }
        guard let connectors else {
            let channelA = LinkSyncChannel(made.a), channelB = LinkSyncChannel(made.b)
            state.withLock { state in
                state.channels[link.a].append(channelA)
                state.channels[link.b].append(channelB)
            }
            peers[link.a].engine.connect(channelA)
            peers[link.b].engine.connect(channelB)
            return
        }
        let (dialer, acceptor) = (connectors[link.a], connectors[link.b])
        let (engineA, engineB) = (peers[link.a].engine, peers[link.b].engine)
        Task {
            async let accepted = try? acceptor.secure(made.b, as: .responder, for: engineB)
            let dialled = try? await dialer.secure(made.a, as: .initiator, peer: acceptor.handshake.identity.peerID, for: engineA)
            guard let dialled, let secured = await accepted else {
                // Dropped during the handshake: forget the wire so that it can be made again.
                made.a.close()
                state.withLock { state in
                    state.refused += 1
                    if state.wires[link]?.a === made.a { state.wires[link] = nil }
                }
                return
            }
            let atA = dialer.connect(dialled, to: engineA), atB = acceptor.connect(secured, to: engineB)
            state.withLock { state in
                state.channels[link.a].append(atA.frames)
                state.channels[link.b].append(atB.frames)
            }
        }
    }

    /// Fails one link abruptly, as a radio going out of range: peer `link.a`'s end goes at once,
    /// the other end notices after `detection`. Sessions on it end; nothing they had merged is lost.
    public func drop(_ link: Topology.Link, peerNoticesAfter detection: Duration = .zero) {
        let wire = state.withLock { $0.wires.removeValue(forKey: link) }
        wire?.sever(detection)
    }

    /// The links that are up.
    public var connectedLinks: [Topology.Link] { state.withLock { Array($0.wires.keys) } }

    /// Bytes peer `index` has put on its links so far (fragment headers included; in a secure mesh
    /// handshakes and 16-byte tags too).
    public func bytesSent(by index: Int) -> Int {
        state.withLock { $0.sent[index] }
    }

    /// Bytes peer `index` has taken from its links so far (fragment headers included).
    public func bytesReceived(by index: Int) -> Int {
        state.withLock { $0.received[index] }
    }

    /// Sync frames peer `index` has sent so far.
    public func framesSent(by index: Int) -> Int {
        state.withLock { $0.channels[index].reduce(0) { $0 + $1.framesSent.frames } }
    }

    /// Handshakes that did not complete (in a secure mesh).
    public var handshakesFailed: Int { state.withLock { $0.refused } }

    /// Links made so far, first connections and reconnections.
    public var linksMade: Int { state.withLock { $0.linksMade } }

    /// `link` with its bytes added to peer `index`'s figures.
    private func counted(_ link: any Link, peer index: Int) -> any Link {
        CountedLink(
            link,
            sent: { [weak self] count in self?.state.withLock { $0.sent[index] += count } },
            received: { [weak self] count in self?.state.withLock { $0.received[index] += count } }
        )
    }

    /// Closes every link and stops every engine.
    public func stop() {
        let wires = state.withLock { state -> [Wire] in
            state.stopped = true
            defer { state.wires.removeAll() }
            return Array(state.wires.values)
        }
        for wire in wires { wire.a.close() }
        for peer in peers { peer.engine.stop() }
    }
}

import ArcusLoopback
import ArcusMesh
import ArcusStore
import ArcusSync
import Foundation
import Synchronization

/// A whole mesh in one process: a store and a sync engine per peer, linked by loopback links
/// as a `Topology` says. Links can be dropped and made again while the engines run, as radios
/// go in and out of range; a new link starts new sessions, which resume where the last ones
/// stopped.
public final class LoopbackMesh: Sendable {
    public struct Peer: Sendable {
        public let index: Int
        public let name: String
        public let store: Store
        public let engine: SyncEngine
    }

    public let peers: [Peer]
    public let topology: Topology
    public let conditions: LoopbackConditions

    private struct Wire {
        let a: LoopbackLink, b: LoopbackLink
        let channelA: LinkSyncChannel, channelB: LinkSyncChannel
    }

    private struct State {
        /// The link each topology link has now, if it is up.
        var wires: [Topology.Link: Wire] = [:]
        /// Every link end a peer has had, for its statistics (ends keep them after closing).
        var ends: [[(link: LoopbackLink, channel: LinkSyncChannel)]]
        var stopped = false
    }

    private let state: Mutex<State>

    /// Makes the peers (`makeStore(index)` gives each its store) and their engines; nothing is
    /// linked until `connect`.
    public init(
        topology: Topology, conditions: LoopbackConditions, options: SyncEngine.Options = SyncEngine.Options(),
        makeStore: (Int) throws -> Store
    ) throws {
        self.topology = topology
        self.conditions = conditions
        var peers: [Peer] = []
        for index in 0..<topology.peerCount {
            var peerOptions = options
            peerOptions.name = "peer-\(index)"
            let store = try makeStore(index)
            peers.append(Peer(index: index, name: peerOptions.name, store: store, engine: try SyncEngine(store: store, options: peerOptions)))
        }
        self.peers = peers
        state = Mutex(State(ends: Array(repeating: [], count: topology.peerCount)))
    }

    /// Brings up every link of the topology that is down.
    public func connectAll() {
        for link in topology.links { connect(link) }
    }

    /// Brings up one link (if it is down): a fresh loopback pair and a sync session at each end.
    public func connect(_ link: Topology.Link) {
        let made: Wire? = state.withLock { state in
            guard !state.stopped, state.wires[link] == nil else { return nil }
            let (a, b) = Loopback.pair(conditions, name: "\(peers[link.a].name)-\(peers[link.b].name)")
            let wire = Wire(a: a, b: b, channelA: LinkSyncChannel(a), channelB: LinkSyncChannel(b))
            state.wires[link] = wire
            state.ends[link.a].append((a, wire.channelA))
            state.ends[link.b].append((b, wire.channelB))
            return wire
        }
        guard let made else { return }
        peers[link.a].engine.connect(made.channelA)
        peers[link.b].engine.connect(made.channelB)
    }

    /// Fails one link abruptly, as a radio going out of range: peer `link.a`'s end goes at once,
    /// the other end notices after `detection`. Sessions on it end; nothing they had merged is lost.
    public func drop(_ link: Topology.Link, peerNoticesAfter detection: Duration = .zero) {
        let wire = state.withLock { $0.wires.removeValue(forKey: link) }
        wire?.a.drop(peerNoticesAfter: detection)
    }

    /// The links that are up.
    public var connectedLinks: [Topology.Link] { state.withLock { Array($0.wires.keys) } }

    /// Bytes peer `index` has put on its links so far (fragment headers included).
    public func bytesSent(by index: Int) -> Int {
        state.withLock { $0.ends[index].reduce(0) { $0 + $1.link.statistics.bytesSent } }
    }

    /// Bytes peer `index` has taken from its links so far (fragment headers included).
    public func bytesReceived(by index: Int) -> Int {
        state.withLock { $0.ends[index].reduce(0) { $0 + $1.link.statistics.bytesReceived } }
    }

    /// Sync frames peer `index` has sent so far.
    public func framesSent(by index: Int) -> Int {
        state.withLock { $0.ends[index].reduce(0) { $0 + $1.channel.framesSent.frames } }
    }

    /// Links made so far, first connections and reconnections.
    public var linksMade: Int { state.withLock { $0.ends.reduce(0) { $0 + $1.count } / 2 } }

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

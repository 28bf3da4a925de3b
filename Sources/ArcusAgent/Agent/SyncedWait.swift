import ArcusCRDT
import ArcusMesh
import ArcusStore
import ArcusSync

/// A write's answer held back until the peers named hold it (`arcus exec --wait-synced`, the
/// API's `wait_synced`): proof the write propagated, not just that it committed here.
package struct SyncedWait {
    /// A peer as the caller named it, and its key in the sync engine (the hex of its site).
    package struct Target {
        package let named: String
        let key: String
    }

    package let targets: [Target]
    package let timeout: Duration

    /// The longest wait asked for: past it a client should poll the peers instead.
    package static let longestTimeout: Duration = .seconds(3600)
    package static let defaultTimeout: Duration = .seconds(30)
    /// Most peers one request may wait for.
    static let mostPeers = 64

    /// Each name is a peer id (32 hex digits, as `arcus peers` shows), its site (16), or the name
    /// a peer announces (unique among the peers this agent knows).
    package init(peers names: [String], timeout: Duration, graph: PresenceGraph) throws(CommandError) {
        guard !names.isEmpty else { throw CommandError("\"wait_synced\" names no peer: give one or more peer ids or names (arcus peers lists them)") }
        guard names.count <= Self.mostPeers else { throw CommandError("\"wait_synced\" names \(names.count) peers; at most \(Self.mostPeers)") }
        guard timeout > .zero, timeout <= Self.longestTimeout else {
            throw CommandError("\"timeout\" must be more than 0 and at most \(Int(Self.longestTimeout.inSeconds)) seconds")
        }
        var targets: [Target] = []
        for name in names {
            targets.append(Target(named: name, key: try Self.key(of: name, graph: graph)))
        }
        self.targets = targets
        self.timeout = timeout
    }

    private static func key(of name: String, graph: PresenceGraph) throws(CommandError) -> String {
        let lower = name.lowercased()
        let isHex = !lower.isEmpty && lower.allSatisfy { $0.isHexDigit }
        if isHex, lower.count == PeerID.size * 2, let id = PeerID(bytes: Hex.decode(lower) ?? []) { return siteKey(SiteID(peer: id)) }
        if isHex, lower.count == 16, let raw = UInt64(lower, radix: 16) { return siteKey(SiteID(raw)) }
        let named = graph.peers.values.filter { $0.name == name }
        guard named.count == 1, let peer = named.first else {
            throw CommandError(named.isEmpty
                ? "no peer named \(name) is known: give its id (arcus peers lists the peers this agent knows)"
                : "\(named.count) peers are named \(name): give the id of the one meant (arcus peers lists them)")
        }
        return siteKey(SiteID(peer: peer.id))
    }

    /// How the sync engine names a peer: its hello's peer id (its site, 8 bytes big-endian) in hex.
    static func siteKey(_ site: SiteID) -> String {
        let hex = String(site.rawValue, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// Waits until every target holds `documents`, or the timeout; returns the ones that do not,
    /// each with what it lacks.
    package func unheld(_ documents: [DocumentKey], engine: SyncEngine) async throws -> [(Target, PeerHolding)] {
        let deadline = ContinuousClock.now + timeout
        while true {
            var waiting: [(Target, PeerHolding)] = []
            for target in targets {
                let holding = try engine.peer(target.key, holding: documents)
                if holding != .holds { waiting.append((target, holding)) }
            }
            if waiting.isEmpty || ContinuousClock.now >= deadline { return waiting }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Why a peer does not hold the write, for a person.
    package static func reason(_ holding: PeerHolding) -> String {
        switch holding {
        case .holds: "holds it"
        case .behind(let key, let acknowledged, let needed):
            "has acknowledged this agent's changes up to commit \(acknowledged); \(key.collection) \(key.id.jsonString) is at \(needed) (is it connected? arcus peers)"
        case .neverServed:
            "has never synced with this agent directly: only a peer this agent serves can say what it holds (it may have the write through others; wait on the peer between, or on it from an agent it syncs with)"
        case .notSubscribed(let key):
            "does not subscribe to \(key.collection) \(key.id.jsonString) (on that peer: arcus subscribe --agent URL \"SELECT * FROM \(key.collection)\")"
        }
    }
}

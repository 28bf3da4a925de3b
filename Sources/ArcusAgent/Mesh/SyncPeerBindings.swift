import ArcusMesh
import Synchronization

/// Which sync peer id (the remote store's site id, from its sync hello) each authenticated mesh
/// peer speaks for, as first seen. The two ids are unrelated by construction — a site id is 8
/// random bytes of a store, a `PeerID` 16 bytes hashed from keys — so nothing derives one from
/// the other; instead the agent binds them on first use and holds every later session to it:
///
/// - a mesh peer whose sync hello names another site id than the one it first named is refused;
/// - a site id already bound to one mesh peer, claimed by another, is refused too, so that no
///   authenticated peer can speak for another's store.
///
/// Bindings live as long as this object (the agent's run); see Docs/Security.md.
public final class SyncPeerBindings: Sendable {
    private struct State {
        var siteOf: [PeerID: [UInt8]] = [:]
        var peerOf: [[UInt8]: PeerID] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    /// Binds `siteID` to `peer` if neither is bound yet; nil when that holds (now or already),
    /// otherwise why not.
    public func bind(_ siteID: [UInt8], to peer: PeerID) -> String? {
        state.withLock { state in
            if let bound = state.siteOf[peer] {
                return bound == siteID ? nil : "\(peer) first synced as \(Self.hex(bound)), now claims \(Self.hex(siteID))"
            }
            if let owner = state.peerOf[siteID] {
                return "\(peer) claims sync peer id \(Self.hex(siteID)), which belongs to \(owner)"
            }
            state.siteOf[peer] = siteID
            state.peerOf[siteID] = peer
            return nil
        }
    }

    /// The site id bound to `peer`, if any.
    public func siteID(of peer: PeerID) -> [UInt8]? { state.withLock { $0.siteOf[peer] } }

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { $0 < 16 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }
}

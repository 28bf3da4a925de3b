/// Where a transport can reach a peer: the kind of transport and an address only that transport
/// reads (a host and port, a Bluetooth address and PSM, a relay subject, a loopback name), with
/// the peer id the peer advertised there, if it advertises one.
///
/// The advertised id is a hint for choosing whom to dial, not proof: only the handshake on the
/// link binds it to a key.
public struct TransportEndpoint: Sendable, Hashable, CustomStringConvertible {
    public var kind: LinkKind
    /// Opaque outside the transport that made it.
    public var address: String
    /// The peer id advertised with the address (an mDNS TXT record, the dialler's hello).
    public var peer: PeerID?
    /// The first bytes of the peer id, where the medium advertises no more (a BLE advert has room
    /// for 4); nil when `peer` is known or nothing is advertised.
    public var peerPrefix: [UInt8]?

    public init(kind: LinkKind, address: String, peer: PeerID? = nil, peerPrefix: [UInt8]? = nil) {
        self.kind = kind
        self.address = address
        self.peer = peer
        self.peerPrefix = peer == nil ? peerPrefix : nil
    }

    /// Of two peers that hear each other, the one with the lower id dials, so that they do not
    /// both: whether `local` dials the peer here. A peer that advertises no id (a static peer) is
    /// dialled; one that advertises only a prefix, unless the prefix is below `local`'s (on equal
    /// prefixes both dial, and the multiplexer keeps one session).
    public func isDialled(by local: PeerID) -> Bool {
        if let peer { return peer > local }
        if let peerPrefix { return !peerPrefix.lexicographicallyPrecedes(local.bytes.prefix(peerPrefix.count)) }
        return true
    }

    public var description: String {
        "\(kind.rawValue) \(address)" + (peer.map { " (peer \($0))" } ?? peerPrefix.map { " (peer \(Hex.encode($0))…)" } ?? "")
    }
}

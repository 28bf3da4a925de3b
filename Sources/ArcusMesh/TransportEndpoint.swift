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
    /// The peer id advertised with the address (an mDNS TXT record, a BLE service datum).
    public var peer: PeerID?

    public init(kind: LinkKind, address: String, peer: PeerID? = nil) {
        self.kind = kind
        self.address = address
        self.peer = peer
    }

    public var description: String {
        "\(kind.rawValue) \(address)" + (peer.map { " (peer \($0))" } ?? "")
    }
}

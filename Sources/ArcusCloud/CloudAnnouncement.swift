import ArcusMesh

/// What a cloud transport publishes on its mesh's presence subject: that it is here (every
/// `CloudSettings.announceInterval`, and at once when it sees a peer it did not know) or that it
/// is leaving. 37 bytes:
///
///     0…10   "ARCUS-NATS1"
///     11     kind: here 1, leaving 2
///     12…27  peer id
///     28…35  instance: random for each run of the transport, so that a restarted peer's
///            links to its earlier run are known to be dead
///     36     flags: bit 0 set when the peer reads its links through the mesh's stream
///            (store-and-forward)
///
/// Like any advertised id, the peer id is a hint for whom to dial; only the handshake binds it.
package struct CloudAnnouncement: Sendable, Equatable {
    package enum Kind: UInt8, Sendable { case here = 1, leaving }

    private static let magic = Array("ARCUS-NATS1".utf8)
    static let size = magic.count + 1 + PeerID.size + 8 + 1

    var kind: Kind
    var peer: PeerID
    var instance: UInt64
    var storesFrames: Bool

    package init(_ kind: Kind, peer: PeerID, instance: UInt64, storesFrames: Bool) {
        self.kind = kind
        self.peer = peer
        self.instance = instance
        self.storesFrames = storesFrames
    }

    package var encoded: [UInt8] {
        Self.magic + [kind.rawValue] + peer.bytes + instance.bigEndianBytes + [storesFrames ? 1 : 0]
    }

    /// The announcement in `bytes`, or nil for anything else: a presence subject is open to
    /// everyone the relay lets publish there.
    package init?(decoding bytes: [UInt8]) {
        guard bytes.count == Self.size, bytes.starts(with: Self.magic) else { return nil }
        var offset = Self.magic.count
        guard let kind = Kind(rawValue: bytes[offset]) else { return nil }
        offset += 1
        guard let peer = PeerID(bytes: bytes[offset..<offset + PeerID.size]) else { return nil }
        offset += PeerID.size
        let instance = UInt64(bigEndianBytes: bytes[offset..<offset + 8])
        offset += 8
        guard bytes[offset] & ~1 == 0 else { return nil }
        self.init(kind, peer: peer, instance: instance, storesFrames: bytes[offset] & 1 == 1)
    }
}

import ArcusMesh

/// The first packet on a dialled channel: who dials, and on an L2CAP radio the PSM it listens on.
/// The emulated radio has no link layer to tell the acceptor the remote address, so the dialler
/// names itself; on a real radio the kernel gives the remote device's address but not the PSM
/// its peer is reached at, which makes the accepted link's endpoint the one its peer's adverts
/// announce. Like any advertised id it is a hint that only the session handshake proves.
package struct LinkHello: Sendable, Hashable {
    private static let magic = Array("ARCUS-BLE1".utf8)
    /// Without the PSM; with it, two bytes more (little-endian).
    static let size = magic.count + PeerID.size
    static let largestSize = size + 2

    package var peer: PeerID
    /// Where the dialler's own listener is (L2CAP radios only).
    package var psm: UInt16?

    package init(peer: PeerID, psm: UInt16? = nil) {
        self.peer = peer
        self.psm = psm
    }

    package var encoded: [UInt8] {
        Self.magic + peer.bytes + (psm.map { [UInt8($0 & 0xFF), UInt8($0 >> 8)] } ?? [])
    }

    /// The hello, or nil for anything but a well-formed one.
    package static func decode(_ packet: some Collection<UInt8>) -> LinkHello? {
        guard packet.count == size || packet.count == largestSize, packet.starts(with: magic) else { return nil }
        let rest = Array(packet.dropFirst(magic.count))
        guard let peer = PeerID(bytes: rest.prefix(PeerID.size)) else { return nil }
        let psm = rest.count == PeerID.size + 2 ? UInt16(rest[PeerID.size]) | UInt16(rest[PeerID.size + 1]) << 8 : nil
        return LinkHello(peer: peer, psm: psm)
    }

    /// Reads the hello from a just-accepted socket, waiting at most `milliseconds`.
    static func read(from socket: SeqPacketSocket, milliseconds: Int32) -> LinkHello? {
        guard socket.waitForReadable(milliseconds: milliseconds) else { return nil }
        var buffer = [UInt8](repeating: 0, count: largestSize)
        // MSG_TRUNC: a longer packet gives its whole length, and is refused rather than cut.
        let received = buffer.withUnsafeMutableBytes { try? socket.receiveWithoutBlocking(into: $0) }
        guard case .packet(let length) = received, length <= largestSize else { return nil }
        return decode(buffer.prefix(length))
    }
}

extension PendingHandshake {
    /// The time left, in whole milliseconds (rounded up), as poll(2) takes it.
    var remainingMilliseconds: Int32 {
        let (seconds, attoseconds) = remaining.components
        let milliseconds = seconds * 1_000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: milliseconds)
    }
}

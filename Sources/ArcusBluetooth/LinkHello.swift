import ArcusMesh

/// The first packet on a dialled emulated channel: who dials. The emulated radio has no link
/// layer to tell the acceptor the remote address, so the dialler names itself; like any
/// advertised id it is a hint that only the session handshake proves.
package enum LinkHello {
    private static let magic = Array("ARCUS-BLE1".utf8)
    static let size = magic.count + PeerID.size

    package static func encode(_ peer: PeerID) -> [UInt8] { magic + peer.bytes }

    /// The dialler's id, or nil for anything but a well-formed hello.
    package static func decode(_ packet: some Collection<UInt8>) -> PeerID? {
        guard packet.count == size, packet.starts(with: magic) else { return nil }
        return PeerID(bytes: packet.dropFirst(magic.count))
    }

    /// Reads the hello from a just-accepted socket, waiting at most `milliseconds`.
    static func read(from socket: SeqPacketSocket, milliseconds: Int32) -> PeerID? {
        guard socket.waitForReadable(milliseconds: milliseconds) else { return nil }
        var buffer = [UInt8](repeating: 0, count: size)
        let received = buffer.withUnsafeMutableBytes { try? socket.receiveWithoutBlocking(into: $0) }
        guard case .packet(let length) = received, length == size else { return nil }
        return decode(buffer)
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

/// Two `SeqPacketLink`s joined by socketpair(AF_UNIX, SOCK_SEQPACKET): an emulated L2CAP
/// channel in one process, optionally paced as a BLE PHY.
public enum EmulatedLinkPair {
    /// BLE's default ATT/L2CAP MTU with data length extension (251-byte LL PDU less headers).
    public static let defaultMTU = 247

    /// The send buffer each end asks for; the kernel doubles it (see `bufferLimit`).
    static func sendBuffer(mtu: Int) -> Int { max(32 * 1024, 4 * mtu) }

    /// The most bytes of messages one direction holds, sent but unread: the kernel's doubled send
    /// buffer (packets are charged more than their payload), one packet over it, and what the
    /// emulated radio has paced but not yet delivered.
    public static func bufferLimit(mtu: Int = defaultMTU, phy: EmulatedPHY? = nil) -> Int {
        2 * sendBuffer(mtu: mtu) + mtu + (phy?.bytesInFlight(mtu: mtu) ?? 0)
    }

    public static func make(mtu: Int = defaultMTU, phy: EmulatedPHY? = nil, name: String = "emulated") throws -> (SeqPacketLink, SeqPacketLink) {
        let (a, b) = try SeqPacketSocket.pair()
        for socket in [a, b] { try socket.setSendBuffer(bytes: sendBuffer(mtu: mtu)) }
        return (
            try SeqPacketLink(socket: a, mtu: mtu, description: "bluetooth \(name) end a", phy: phy),
            try SeqPacketLink(socket: b, mtu: mtu, description: "bluetooth \(name) end b", phy: phy)
        )
    }
}

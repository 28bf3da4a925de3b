/// What the emulated radio charges for carrying an SDU, as a BLE LE 1M (or faster) PHY would:
/// the L2CAP framing, the link-layer packets it is cut into, the gaps between those packets, and
/// the wait for the next connection event. The sending side paces by it; nothing busy-waits.
public struct EmulatedPHY: Sendable, Hashable, CustomStringConvertible {
    /// The PHY's raw rate in bits per second (1 Mbit/s for LE 1M, 2 Mbit/s for LE 2M).
    public var bitsPerSecond: Double
    /// One way latency added to every SDU: on average an SDU waits for the next connection event.
    public var connectionInterval: Duration

    public init(bitsPerSecond: Double = 1_000_000, connectionInterval: Duration = .microseconds(7_500)) {
        precondition(bitsPerSecond > 0, "a PHY needs a positive rate")
        self.bitsPerSecond = bitsPerSecond
        self.connectionInterval = connectionInterval
    }

    /// Basic L2CAP header (length + channel id). The K-frame's 2-byte SDU length is left out, as
    /// if the MPS were chosen so that a default-MTU SDU fills exactly one 251-byte LL PDU.
    static let l2capHeaderBytes = 4
    /// The largest LL data PDU payload with data length extension.
    static let linkLayerPayloadBytes = 251
    /// Per LL packet: preamble 1, access address 4, header 2, MIC 4, CRC 3.
    static let linkLayerOverheadBytes = 14
    /// T_IFS between packets on air.
    static let interFrameSpacingNanoseconds: UInt64 = 150_000

    /// How long the radio is busy sending one SDU of `sduBytes`.
    public func airtimeNanoseconds(sduBytes: Int) -> UInt64 {
        let pduBytes = sduBytes + Self.l2capHeaderBytes
        let packets = max(1, (pduBytes + Self.linkLayerPayloadBytes - 1) / Self.linkLayerPayloadBytes)
        let bits = Double((pduBytes + packets * Self.linkLayerOverheadBytes) * 8)
        return UInt64(bits / bitsPerSecond * 1e9) + UInt64(packets) * Self.interFrameSpacingNanoseconds
    }

    public var latencyNanoseconds: UInt64 {
        let (seconds, attoseconds) = connectionInterval.components
        return UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
    }

    /// Bytes of SDUs per second when every SDU is `mtu` bytes: the link's goodput.
    public func goodputBytesPerSecond(mtu: Int) -> Double {
        Double(mtu) * 1e9 / Double(airtimeNanoseconds(sduBytes: mtu))
    }

    /// Bytes that may be on the air (paced, not yet delivered) at once. An LE credit-based channel
    /// grants the sender credits for several SDUs, so a busy link stays busy across connection
    /// events: twice what the PHY moves in one connection interval plus two SDUs (more than the
    /// bandwidth-delay product, so pacing alone sets the rate), and at least four SDUs. Still
    /// bounded, so a slow consumer holds the producer back.
    func bytesInFlight(mtu: Int) -> Int {
        let perInterval = goodputBytesPerSecond(mtu: mtu) * Double(latencyNanoseconds) / 1e9
        return max(4 * mtu, Int(perInterval * 2) + 2 * mtu)
    }

    public var description: String { "\(Int(bitsPerSecond)) bit/s PHY, \(connectionInterval) connection interval" }
}

import ArcusAgent
import ArcusBluetooth
import ArcusLoopback
import ArcusMesh

/// How a demo mesh links two of its peers: in-process loopback links shaped as `conditions`
/// say, or the emulated Bluetooth radio's channels (AF_UNIX SOCK_SEQPACKET, the L2CAP code
/// path), paced as an LE PHY.
public enum DemoLinks: Sendable {
    case loopback(LoopbackConditions)
    case bluetoothEmulated(mtu: Int = 247, bitsPerSecond: Double = 1_000_000, connectionInterval: Duration = .microseconds(7_500))

    /// A connected pair, and how to fail it abruptly: the first end goes at once, the second
    /// notices after the delay (a supervision timeout) where the link can model it, else at once.
    func pair(name: String) throws -> (a: any Link, b: any Link, sever: @Sendable (Duration) -> Void) {
        switch self {
        case .loopback(let conditions):
            let (a, b) = Loopback.pair(conditions, name: name)
            return (a, b, { a.drop(peerNoticesAfter: $0) })
        case .bluetoothEmulated(let mtu, let bitsPerSecond, let interval):
            let (a, b) = try EmulatedLinkPair.make(mtu: mtu, phy: EmulatedPHY(bitsPerSecond: bitsPerSecond, connectionInterval: interval), name: name)
            return (a, b, { _ in a.close() })
        }
    }

    /// For logs and figures.
    public var name: String {
        switch self {
        case .loopback: return "loopback"
        case .bluetoothEmulated: return "ble-emulated"
        }
    }
}

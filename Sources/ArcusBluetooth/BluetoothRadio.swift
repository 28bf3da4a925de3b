/// What a `BluetoothTransport` runs on, chosen when it is made.
public enum BluetoothRadio: Sendable {
    /// The machine's adapter through BlueZ: L2CAP LE credit-based channels on a dynamic PSM.
    case l2cap(L2CAPRadioSettings)
    /// The emulated radio: the same channel code over AF_UNIX SOCK_SEQPACKET sockets in a
    /// directory that every emulated peer on this machine shares (`--ble-emulated DIR`).
    case emulated(EmulatedRadioSettings)
}

public struct L2CAPRadioSettings: Sendable {
    /// The controller to use (`--ble-adapter`); nil for the lowest-numbered one.
    public var adapter: BluetoothAdapter?
    /// The PSM to listen on: 0 for a dynamic one, or a configured one (below 0x80 needs
    /// CAP_NET_BIND_SERVICE).
    public var psm: UInt16
    /// The largest SDU this end accepts (BT_RCVMTU).
    public var receiveMTU: UInt16
    /// The radio link's own security. Low by default: every session over it is authenticated and
    /// encrypted by the mesh's Noise handshake, and medium or high would make the kernel pair,
    /// which waits for a pairing agent that a device with no one at it does not have.
    public var security: BluetoothSecurityLevel
    /// How long a dial may take to bring its channel up; nil leaves it to the kernel (40 s). A
    /// shorter one cancels LE connections under way, which on btvirt's controllers left one side
    /// connected and the other not, for good (no supervision timeout there): the next channel to
    /// that peer went into the void. Peers stay reachable while dialling because each renews its
    /// advert whenever a connection comes up (`BlueZDiscovery.readvertise`).
    public var connectTimeout: Duration?

    public init(
        adapter: BluetoothAdapter? = nil, psm: UInt16 = 0, receiveMTU: UInt16 = UInt16(EmulatedLinkPair.defaultMTU),
        security: BluetoothSecurityLevel = .low
    ) {
        self.adapter = adapter
        self.psm = psm
        self.receiveMTU = receiveMTU
        self.security = security
    }
}

public struct EmulatedRadioSettings: Sendable {
    /// The shared directory: peers/<id>.sock, adverts/<id>, topology.json. Keep it short: socket
    /// paths must fit sun_path (107 bytes), so DIR may be at most 63 bytes.
    public var directory: String
    /// Every emulated channel's SDU MTU.
    public var mtu: Int
    /// How sends are paced; nil sends as fast as the sockets take them.
    public var phy: EmulatedPHY?
    /// How often the directory is scanned for adverts and topology changes.
    public var scanInterval: Duration
    /// How long a dial takes before the channel is up, as an LE connection does: the initiator
    /// catches one of the peer's adverts (half an advertising interval on average), then the
    /// connection and the L2CAP channel are set up over a couple of connection events.
    public var connectionSetup: Duration

    public init(
        directory: String, mtu: Int = EmulatedLinkPair.defaultMTU, phy: EmulatedPHY? = EmulatedPHY(), scanInterval: Duration = .milliseconds(500),
        connectionSetup: Duration = .milliseconds(60)
    ) {
        self.connectionSetup = connectionSetup
        self.directory = directory
        self.mtu = mtu
        self.phy = phy
        self.scanInterval = scanInterval
    }

    public var peersDirectory: String { directory + "/peers" }
    public var advertsDirectory: String { directory + "/adverts" }
    public var topologyPath: String { directory + "/topology.json" }
    public func socketPath(of peer: String) -> String { peersDirectory + "/\(peer).sock" }
    public func advertPath(of peer: String) -> String { advertsDirectory + "/\(peer)" }
}

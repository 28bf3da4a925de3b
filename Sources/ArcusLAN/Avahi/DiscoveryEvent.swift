/// Another agent, as found on the LAN and resolved: where to dial it and what it says it is.
public struct DiscoveredService: Sendable, Hashable {
    /// The DNS-SD instance name, unique on the LAN.
    public var name: String
    /// The address to dial, numeric ("192.168.1.20", "127.0.0.1").
    public var address: String
    /// The host's mDNS name ("pi-kitchen.local").
    public var hostName: String
    public var port: UInt16
    public var txt: ServiceTXT
    /// The network interface it was seen on.
    public var interface: Int32
}

/// What an `AvahiService` reports, in order, on its `events` stream.
public enum DiscoveryEvent: Sendable, Hashable {
    /// Our advertisement is on the network under this name (a new name after a collision).
    case published(name: String)
    /// Another agent appeared, or changed its address, port or TXT record.
    case found(DiscoveredService)
    /// The agent of this name is gone (it stopped, or said goodbye).
    case lost(name: String)
    /// A service was seen but not believed: its TXT record is out of shape, or it did not resolve.
    case ignored(name: String, reason: String)
    /// Discovery cannot work, or stopped working, for a reason a person should read; the agent
    /// goes on with its other transports and static peers.
    case warning(String)
}

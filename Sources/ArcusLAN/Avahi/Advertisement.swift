/// What this agent publishes: a service instance name, the TCP port its LAN transport listens on,
/// and its TXT record.
public struct Advertisement: Sendable, Hashable {
    /// The DNS-SD instance name wanted; if another host holds it, avahi picks an alternative
    /// ("name #2") and `DiscoveryEvent.published` says which name was taken.
    public var name: String
    public var port: UInt16
    /// The TXT strings as published. Internal so that tests can publish records a well-behaved
    /// agent never would.
    var txtEntries: [[UInt8]]

    public init(name: String, port: UInt16, txt: ServiceTXT) {
        self.name = name
        self.port = port
        self.txtEntries = txt.entries
    }

    init(name: String, port: UInt16, txtEntries: [[UInt8]]) {
        self.name = name
        self.port = port
        self.txtEntries = txtEntries
    }
}

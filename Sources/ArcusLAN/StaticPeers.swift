import ArcusMesh

/// Peers named in the config file or on the command line, as `host:port`: announced once, when
/// the transport starts, and never lost (a peer that is down fails the dial instead, and the
/// agent dials it again until it answers).
public struct StaticPeers: LANDiscovery {
    public let addresses: [LANAddress]

    public init(_ addresses: [LANAddress]) {
        self.addresses = addresses
    }

    /// Reads each `host:port`; throws the first `LANAddressError`, which quotes the bad entry.
    public init(parsing texts: [String]) throws(LANAddressError) {
        var addresses: [LANAddress] = []
        for text in texts { addresses.append(try LANAddress(parsing: text)) }
        self.init(addresses)
    }

    public func peers(advertising local: TransportEndpoint) -> AsyncStream<LANDiscoveryEvent> {
        AsyncStream { continuation in
            for address in addresses where address.description != local.address {
                continuation.yield(.appeared(TransportEndpoint(kind: .lan, address: address.description)))
            }
            // Finishing would look like the source ending; a static list just stays as it is.
        }
    }
}

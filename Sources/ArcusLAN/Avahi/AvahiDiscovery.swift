import ArcusMesh

/// mDNS through avahi-daemon as a source of LAN peers (`LANDiscovery`): publishes the port this
/// transport listens on as `_arcus._tcp`, with the peer id, the mesh hash and the protocol
/// version in its TXT record, and announces every other agent of the same mesh and protocol as it
/// is resolved, and as lost when it goes. A missing daemon costs one warning (`warn`), and the
/// transport goes on with its other sources (static peers).
public struct AvahiDiscovery: LANDiscovery {
    /// The DNS-SD instance name wanted (avahi picks an alternative if the LAN holds it).
    public var name: String
    /// 16 hex digits naming the mesh without telling the LAN which mesh it is.
    public var meshHash: String
    public var protocolVersion: UInt16
    /// The interface index to publish and browse on (`if_nametoindex`); nil for every interface
    /// avahi-daemon is allowed to use.
    public var interface: Int32?
    /// Told what a person should read: the daemon is missing, or discovery stopped working.
    public var warn: @Sendable (String) -> Void

    public init(
        name: String, meshHash: String, protocolVersion: UInt16 = 1, interface: Int32? = nil,
        warn: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.name = name
        self.meshHash = meshHash
        self.protocolVersion = protocolVersion
        self.interface = interface
        self.warn = warn
    }

    public func peers(advertising local: TransportEndpoint) -> AsyncStream<LANDiscoveryEvent> {
        AsyncStream { continuation in
            let service = AvahiService(interface: interface)
            let ours = ServiceTXT(
                peer: local.peer?.description ?? String(repeating: "0", count: ServiceTXT.peerHexDigits),
                meshHash: meshHash, protocolVersion: protocolVersion
            )
            let port = (try? LANAddress(parsing: local.address)).map { UInt16($0.port) }
            do {
                try service.start(advertising: port.map { Advertisement(name: name, port: $0, txt: ours) })
            } catch {
                warn("mDNS discovery could not start (\(error)); the LAN transport goes on with its static peers")
                continuation.finish()
                return
            }
            let pump = Task {
                var announced: [String: TransportEndpoint] = [:]
                for await event in service.events {
                    switch event {
                    case .found(let found):
                        guard found.txt.meshHash == meshHash, found.txt.protocolVersion == protocolVersion,
                              found.txt.peer != ours.peer else { continue }
                        let endpoint = TransportEndpoint(
                            kind: .lan, address: LANAddress(host: found.address, port: Int(found.port)).description,
                            peer: Hex.decode(found.txt.peer).flatMap { PeerID(bytes: $0) }
                        )
                        if let before = announced[found.name], before != endpoint { continuation.yield(.lost(before)) }
                        if announced[found.name] != endpoint { continuation.yield(.appeared(endpoint)) }
                        announced[found.name] = endpoint
                    case .lost(let name):
                        if let endpoint = announced.removeValue(forKey: name) { continuation.yield(.lost(endpoint)) }
                    case .warning(let text):
                        warn(text)
                    case .published, .ignored:
                        break
                    }
                }
            }
            continuation.onTermination = { _ in
                pump.cancel()
                service.stop()
            }
        }
    }
}

/// Opens a link to a peer over the best of the agent's transports that can reach it now: what the
/// agent does when the multiplexer says `.needsLink(peer)` (the LAN dropped: open Bluetooth),
/// rather than waiting for a link that is already open.
///
/// It finds the peer by the id its transports' endpoints advertise, and tries them in the
/// session's kind order (LAN, Bluetooth, cloud, loopback).
public struct LinkDialer: Sendable {
    public let transports: [any Transport]

    public init(_ transports: [any Transport]) {
        self.transports = transports
    }

    /// Where `peer` is advertised now, with the transport that reaches it there, best first.
    public func routes(to peer: PeerID) async -> [(endpoint: TransportEndpoint, transport: any Transport)] {
        var routes: [(endpoint: TransportEndpoint, transport: any Transport)] = []
        for transport in transports {
            for endpoint in await transport.reachablePeers where endpoint.peer == peer {
                routes.append((endpoint, transport))
            }
        }
        return routes.sorted { $0.endpoint.kind.preferenceRank < $1.endpoint.kind.preferenceRank }
    }

    /// Dials `peer` at each route in turn, best first, and returns the first link that opens.
    /// Throws `LinkDialError` with every attempt's failure when none does, or when no transport
    /// reaches the peer at all.
    public func open(to peer: PeerID) async throws(LinkDialError) -> any Link {
        var failures: [LinkDialError.Attempt] = []
        for route in await routes(to: peer) {
            do {
                return try await route.transport.open(to: route.endpoint)
            } catch {
                failures.append(LinkDialError.Attempt(endpoint: route.endpoint, error: error))
            }
        }
        throw LinkDialError(peer: peer, attempts: failures)
    }
}

/// No transport could open a link to a peer: either none reaches it (`attempts` is empty) or
/// every one that does failed, each for the reason given.
public struct LinkDialError: Error, Sendable, CustomStringConvertible {
    public struct Attempt: Sendable {
        public var endpoint: TransportEndpoint
        public var error: any Error
    }

    public var peer: PeerID
    public var attempts: [Attempt]

    public var description: String {
        guard !attempts.isEmpty else { return "no transport reaches peer \(peer)" }
        let reasons = attempts.map { "\($0.endpoint): \($0.error)" }.joined(separator: "; ")
        return "no link to peer \(peer) could be opened: \(reasons)"
    }
}

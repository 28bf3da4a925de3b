/// Why a transport could not do what it was asked. Each case names the endpoint or transport, so
/// that a log line says whom the agent failed to reach.
public enum TransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `open(to:)` before `start()`, or after `stop()`.
    case notRunning(transport: String)
    /// `start()` after `stop()`: a transport runs once; make a new one.
    case alreadyStopped(transport: String)
    /// The endpoint belongs to another kind of transport.
    case wrongKind(TransportEndpoint, expected: LinkKind)
    /// Nothing has ever been announced at the endpoint's address.
    case unknownEndpoint(TransportEndpoint)
    /// Something is there but out of reach now (out of radio range, a route down).
    case unreachable(TransportEndpoint)
    /// The peer at the endpoint has stopped its transport.
    case peerStopped(TransportEndpoint)

    public var description: String {
        switch self {
        case .notRunning(let transport): return "the \(transport) transport is not running: start it before opening links"
        case .alreadyStopped(let transport): return "the \(transport) transport was stopped and cannot start again; make a new one"
        case .wrongKind(let endpoint, let expected): return "\(endpoint) is not a \(expected.rawValue) endpoint"
        case .unknownEndpoint(let endpoint): return "no peer was ever announced at \(endpoint)"
        case .unreachable(let endpoint): return "\(endpoint) is out of reach"
        case .peerStopped(let endpoint): return "the peer at \(endpoint) has stopped its transport"
        }
    }
}

import ArcusLAN
import ArcusMesh
import Synchronization

/// An in-process stand-in for mDNS, for tests: every transport started with it advertises its
/// endpoint here, hears of every other, and hears of each one leaving when it stops. It is what
/// Avahi will be to `LANTransport`, without a daemon.
final class LANDirectory: LANDiscovery, Sendable {
    private let members = Mutex<[TransportEndpoint: AsyncStream<LANDiscoveryEvent>.Continuation]>([:])

    func peers(advertising local: TransportEndpoint) -> AsyncStream<LANDiscoveryEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: LANDiscoveryEvent.self)
        members.withLock { members in
            for (endpoint, member) in members {
                continuation.yield(.appeared(endpoint))
                member.yield(.appeared(local))
            }
            members[local] = continuation
        }
        continuation.onTermination = { [weak self] _ in
            self?.members.withLock { members in
                members[local] = nil
                for member in members.values { member.yield(.lost(local)) }
            }
        }
        return stream
    }
}

import ArcusMesh
import Synchronization

/// Everything a transport announced, consumed from its `events` as they come, so that a test can
/// wait for the event it expects while others arrive in between.
public final class TransportEventLog: Sendable {
    private let state = Mutex(Log())

    private struct Log {
        var unclaimed: [TransportEvent] = []
        var isFinished = false
    }

    /// Starts consuming `events`: make the log before the transport starts.
    /// An accepted link's pending handshake is settled as it is logged: the test owns the link
    /// from then on, and runs no handshake on it.
    public init(_ events: AsyncStream<TransportEvent>) {
        Task { [self] in
            for await event in events {
                if case .linkAccepted(_, _, let pending) = event { pending?.settle(.completed) }
                state.withLock { $0.unclaimed.append(event) }
            }
            state.withLock { $0.isFinished = true }
        }
    }

    /// Takes the first unclaimed event `matching` says is `T`, waiting for it up to `limit`;
    /// throws if `events` finishes first or the time runs out.
    public func next<T: Sendable>(
        _ what: String, within limit: Duration = .seconds(45), matching: @escaping @Sendable (TransportEvent) -> T?
    ) async throws -> T {
        try await within(limit, "waiting for \(what)") { [self] in
            while true {
                let found: T?? = state.withLock { log in
                    for (index, event) in log.unclaimed.enumerated() {
                        if let match = matching(event) {
                            log.unclaimed.remove(at: index)
                            return match
                        }
                    }
                    return log.isFinished ? .some(nil) : nil
                }
                switch found {
                case .some(.some(let match)): return match
                case .some(.none): throw TransportEventsFinished(awaited: what)
                case .none: try await Task.sleep(for: .milliseconds(5))
                }
            }
        }
    }

    /// Waits until `events` has finished.
    public func finished(within limit: Duration = .seconds(45)) async throws {
        try await within(limit, "waiting for the events to finish") { [self] in
            while !state.withLock({ $0.isFinished }) { try await Task.sleep(for: .milliseconds(5)) }
        }
    }

    public func appeared(_ endpoint: TransportEndpoint, within limit: Duration = .seconds(45)) async throws {
        try await next("\(endpoint) to appear", within: limit) { event in
            if case .peerAppeared(let seen) = event, seen == endpoint { return () }
            return nil
        }
    }

    public func lost(_ endpoint: TransportEndpoint, within limit: Duration = .seconds(45)) async throws {
        try await next("\(endpoint) to be lost", within: limit) { event in
            if case .peerLost(let seen) = event, seen.kind == endpoint.kind, seen.address == endpoint.address { return () }
            return nil
        }
    }

    /// The next link accepted from `endpoint`.
    public func accepted(from endpoint: TransportEndpoint, within limit: Duration = .seconds(45)) async throws -> any Link {
        try await next("a link from \(endpoint)", within: limit) { event in
            if case .linkAccepted(let link, let from, _) = event, from.kind == endpoint.kind, from.address == endpoint.address { return link }
            return nil
        }
    }
}

/// A transport's events finished before the event a test waited for.
public struct TransportEventsFinished: Error, CustomStringConvertible {
    public let awaited: String

    public var description: String { "the transport's events finished while \(awaited)" }
}

extension PendingHandshakes {
    /// A gate for transports under test that open many links at once from one address (the
    /// conformance suites dial 50 at once from 127.0.0.1): limits no test reaches, with the
    /// default deadlines.
    public static func generous() -> PendingHandshakes {
        var limits = Limits()
        limits.total = 100_000
        limits.perSource = 100_000
        return PendingHandshakes(limits: limits)
    }
}

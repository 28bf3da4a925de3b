import Synchronization

/// When a link last carried anything from the peer, fragment by fragment. A session judges a
/// link alive by it rather than by whole messages, so that a large message crawling over a slow
/// link (a megabyte takes most of a minute on BLE) does not look like silence.
final class LinkActivity: Sendable {
    private let lastHeard = Mutex(ContinuousClock.now)

    var lastHeardAt: ContinuousClock.Instant { lastHeard.withLock { $0 } }

    func heard() { lastHeard.withLock { $0 = .now } }
}

/// A link that notes in `activity` every message its peer sends, and is otherwise the link.
final class ActivityRecordingLink: Link {
    let link: any Link
    let activity: LinkActivity
    let incoming: AsyncStream<[UInt8]>

    init(_ link: any Link, activity: LinkActivity) {
        self.link = link
        self.activity = activity
        self.incoming = .relaying(link.incoming) { message in
            activity.heard()
            return message
        }
    }

    var kind: LinkKind { link.kind }
    var metrics: LinkMetrics { link.metrics }
    var mtu: Int { link.mtu }
    var description: String { link.description }
    func send(_ message: [UInt8]) async throws { try await link.send(message) }
    func close() { link.close() }
}

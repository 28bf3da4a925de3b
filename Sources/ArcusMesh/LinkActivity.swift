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
        let reader = ActivityRecordingReader(link.incoming, activity: activity)
        self.incoming = AsyncStream(unfolding: { await reader.next() })
    }

    var kind: LinkKind { link.kind }
    var mtu: Int { link.mtu }
    var description: String { link.description }
    func send(_ message: [UInt8]) async throws { try await link.send(message) }
    func close() { link.close() }
}

/// Takes the link's messages one at a time, as they are asked for, so the link keeps its backpressure.
private actor ActivityRecordingReader {
    private var messages: AsyncStream<[UInt8]>.Iterator
    private let activity: LinkActivity

    init(_ stream: AsyncStream<[UInt8]>, activity: LinkActivity) {
        self.messages = stream.makeAsyncIterator()
        self.activity = activity
    }

    func next() async -> [UInt8]? {
        var messages = self.messages
        defer { self.messages = messages }
        let message = await messages.next(isolation: self)
        if message != nil { activity.heard() }
        return message
    }
}

import ArcusMesh
import Synchronization

/// One end of a link relayed through NATS: a `Link` of kind `.cloud`.
///
/// Frames go out on the subject from this peer to the other (`CloudSubjects.link`), numbered
/// and sealed (`CloudFrameSeal`): the transport hands the link only frames whose tag is the
/// peer's. The receiver takes them in order and closes the link at the first gap, so a frame the
/// relay lost is never silently skipped (the session above then resends on a new link); one it
/// has already taken (the relay delivering it again, or replaying it) is dropped. The relay
/// holds no back-pressure of its own, so each receiver grants its sender credit: `window` bytes
/// ahead of what its consumer has taken, renewed as the consumer reads, each grant saying the
/// total so far so that a grant replayed grants nothing. A sender out of credit suspends.
///
/// With store-and-forward, frames for a peer that is away wait in the mesh's stream and the
/// link says so in `metrics.storesFramesFor`, so that the session holds it while the peer is
/// gone instead of calling it dead. Whether the peer reads through the stream is in its
/// announcements, which may arrive after its open: the transport tells the link each time it
/// hears one (`peerStoresFrames(for:)`). All members may be called from any task.
public final class CloudLink: Link {
    public var kind: LinkKind { .cloud }
    public let mtu: Int
    public let description: String
    public let incoming: AsyncStream<[UInt8]>
    /// The peer at the other end and the run of its transport this link was made with.
    public let remote: PeerID
    let remoteInstance: UInt64
    let key: CloudLinkKey
    /// Seals what this end sends; `opening` checks what the peer sends.
    private let seal: CloudFrameSeal
    private let opening: CloudFrameSeal
    private let window: Int
    private let storesFramesFor: Mutex<Duration?>
    private let state: Mutex<State>
    private let relay: CloudLinkRelay

    init(key: CloudLinkKey, seal: CloudFrameSeal, credit: Int, settings: CloudSettings, storesFramesFor: Duration?, relay: CloudLinkRelay) {
        self.key = key
        self.remote = key.peer
        self.remoteInstance = seal.remoteInstance
        self.seal = seal
        self.opening = seal.opening
        self.mtu = settings.mtu
        self.window = settings.window
        self.storesFramesFor = Mutex(storesFramesFor)
        self.relay = relay
        self.description = "cloud link \(key.dialledHere ? "to" : "from") \(key.peer.description.prefix(12)) #\(String(key.id, radix: 16))"
        self.state = Mutex(State(credit: credit))
        let reader = LinkReader()
        self.incoming = AsyncStream(unfolding: { await reader.link?.next() })
        reader.link = self
    }

    public var metrics: LinkMetrics {
        LinkMetrics(cost: .metered, storesFramesFor: storesFramesFor.withLock { $0 })
    }

    /// Whether the link has closed, for whatever reason.
    public var isClosed: Bool { state.withLock { $0.closed } }

    /// Why the link closed, if not in order (a gap in the frames, a sender over its credit).
    public var failure: String? { state.withLock { $0.failure } }

    public func send(_ message: [UInt8]) async throws {
        guard message.count <= mtu else { throw LinkError.messageTooLarge(size: message.count, mtu: mtu) }
        let ticket = try state.withLock { state throws(LinkError) -> UInt64? in
            guard !state.closed else { throw .closed }
            if state.waiting.isEmpty && state.credit >= message.count {
                state.credit -= message.count
                state.sendQueue.append(message)
                return nil
            }
            state.nextTicket += 1
            return state.nextTicket
        }
        guard let ticket else { return flushSends() }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let refused: (any Error)? = state.withLock { state in
                    if state.closed { return LinkError.closed }
                    if state.cancelledTickets.remove(ticket) != nil { return CancellationError() }
                    state.waiting.append(Waiting(ticket: ticket, message: message, continuation: continuation))
                    state.grantWaiting()
                    return nil
                }
                if let refused { continuation.resume(throwing: refused) }
            }
        } onCancel: {
            state.withLock { state in
                if let index = state.waiting.firstIndex(where: { $0.ticket == ticket }) {
                    state.waiting.remove(at: index).continuation.resume(throwing: CancellationError())
                } else {
                    state.cancelledTickets.insert(ticket)
                }
            }
        }
        flushSends()
    }

    public func close() {
        end(failure: nil, tellPeer: true)
    }

    // MARK: From the transport

    /// Whether `frame` carries the peer's tag for this link's two runs.
    func isFromPeer(_ frame: CloudFrame) -> Bool {
        opening.verifies(frame)
    }

    /// A frame the peer sent on this link (its tag checked: `isFromPeer`), in the order the relay
    /// delivered it.
    func received(_ frame: CloudFrame) {
        switch frame.kind {
        case .data:
            let violation: String? = state.withLock { state in
                guard !state.closed else { return nil }
                // Taken already: the relay delivered it again, or someone replays it.
                if Self.precedes(frame.value, state.receiveSequence) { return nil }
                guard frame.value == state.receiveSequence else {
                    return "frame \(frame.value) arrived where \(state.receiveSequence) was due: the relay lost frames"
                }
                state.receiveSequence &+= 1
                if let reader = state.reader {
                    state.reader = nil
                    state.consumed += frame.body.count
                    reader.resume(returning: frame.body)
                } else {
                    state.inboxBytes += frame.body.count
                    guard state.inboxBytes <= window + mtu else { return "the peer sent \(state.inboxBytes) bytes over a window of \(window)" }
                    state.inbox.append(frame.body)
                }
                return nil
            }
            if let violation { end(failure: violation, tellPeer: true) }
            grantCreditIfDue()
        case .credit:
            state.withLock { state in
                // A grant says the total so far: an old one (replayed, or delivered again) adds nothing.
                guard !state.closed, Self.precedes(state.creditGrantedToUs, frame.value) else { return }
                state.credit += Int(frame.value &- state.creditGrantedToUs)
                state.creditGrantedToUs = frame.value
                state.grantWaiting()
            }
            flushSends()
        case .close:
            end(failure: nil, tellPeer: false)
        case .open, .accept:
            end(failure: "a \(frame.kind) frame on an open link", tellPeer: true)
        }
    }

    /// How long frames between the two ends wait in the stream while one is away, as the
    /// peer's latest announcement says (nil: they do not, and silence means the link is dead).
    func peerStoresFrames(for duration: Duration?) {
        storesFramesFor.withLock { $0 = duration }
    }

    /// Ends the link because its relay connection or its transport went away.
    func lost(because reason: String?, tellPeer: Bool) {
        end(failure: reason, tellPeer: tellPeer)
    }

    /// Whether `a` comes before `b` in a 32-bit count that wraps (RFC 1982): links never have
    /// 2^31 frames or bytes of credit in flight, so the nearer way round is the true one.
    static func precedes(_ a: UInt32, _ b: UInt32) -> Bool {
        Int32(bitPattern: b &- a) > 0
    }

    // MARK: Inside

    private struct Waiting {
        let ticket: UInt64
        let message: [UInt8]
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var closed = false
        var failure: String?
        /// Bytes the peer accepts before it grants more.
        var credit: Int
        /// Sends waiting for credit, oldest first.
        var waiting: [Waiting] = []
        var nextTicket: UInt64 = 0
        var cancelledTickets: Set<UInt64> = []
        /// Messages with credit, not yet published: published in order by whoever holds
        /// `publishing`, so that sequence numbers and the relay's order agree.
        var sendQueue: [[UInt8]] = []
        var publishing = false
        var sendSequence: UInt32 = 0
        var receiveSequence: UInt32 = 0
        /// The totals of credit frames: what the peer granted this end, and this end the peer
        /// (both beyond the window the open and accept gave, mod 2^32).
        var creditGrantedToUs: UInt32 = 0
        var creditGrantedToPeer: UInt32 = 0
        var inbox: [[UInt8]] = []
        var inboxHead = 0
        var inboxBytes = 0
        var reader: CheckedContinuation<[UInt8]?, Never>?
        var readerGone = false
        /// Bytes the consumer took since credit was last granted.
        var consumed = 0

        mutating func grantWaiting() {
            while let first = waiting.first, credit >= first.message.count {
                waiting.removeFirst()
                credit -= first.message.count
                sendQueue.append(first.message)
                first.continuation.resume()
            }
        }

        mutating func popInbox() -> [UInt8]? {
            guard inboxHead < inbox.count else { return nil }
            let message = inbox[inboxHead]
            inboxHead += 1
            if inboxHead == inbox.count { inbox.removeAll(keepingCapacity: true); inboxHead = 0 }
            inboxBytes -= message.count
            consumed += message.count
            return message
        }
    }

    /// Publishes queued messages, in order, from one caller at a time.
    private func flushSends() {
        while true {
            let next: (frames: [[UInt8]], failed: Bool)? = state.withLock { state in
                guard !state.publishing, !state.sendQueue.isEmpty, !state.closed else { return nil }
                state.publishing = true
                let queue = state.sendQueue
                state.sendQueue.removeAll(keepingCapacity: true)
                var frames: [[UInt8]] = []
                frames.reserveCapacity(queue.count)
                for message in queue {
                    frames.append(seal.seal(CloudFrame(.data, fromDialler: key.dialledHere, link: key.id, value: state.sendSequence, body: message)))
                    state.sendSequence &+= 1
                }
                return (frames, false)
            }
            guard let next else { return }
            var published = true
            for frame in next.frames where published { published = relay.publish(frame, to: key.peer) }
            state.withLock { $0.publishing = false }
            if !published {
                end(failure: "the relay connection refused a frame (closed, or its reconnect buffer is full)", tellPeer: false)
                return
            }
        }
    }

    private func grantCreditIfDue() {
        let total: UInt32? = state.withLock { state in
            guard !state.closed, state.consumed >= window / 4 else { return nil }
            state.creditGrantedToPeer &+= UInt32(truncatingIfNeeded: state.consumed)
            state.consumed = 0
            return state.creditGrantedToPeer
        }
        if let total {
            _ = relay.publish(seal.seal(CloudFrame(.credit, fromDialler: key.dialledHere, link: key.id, value: total)), to: key.peer)
        }
    }

    fileprivate func next() async -> [UInt8]? {
        let message: [UInt8]? = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<[UInt8]?, Never>) in
                let ready: [UInt8]?? = state.withLock { state in
                    if let message = state.popInbox() { return .some(message) }
                    if state.closed || state.readerGone { return .some(nil) }
                    state.reader = continuation
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            state.withLock { state in
                state.readerGone = true
                state.reader?.resume(returning: nil)
                state.reader = nil
            }
        }
        if message != nil { grantCreditIfDue() }
        return message
    }

    /// Closes this end. A peer's orderly close leaves what already arrived for the consumer; any
    /// other end drops it, as `Link.close` says.
    private func end(failure: String?, tellPeer: Bool) {
        let wasOpen = state.withLock { state in
            guard !state.closed else { return false }
            state.closed = true
            state.failure = failure
            for waiting in state.waiting { waiting.continuation.resume(throwing: LinkError.closed) }
            state.waiting = []
            state.sendQueue = []
            let orderly = failure == nil && !tellPeer
            if !orderly { state.inbox = []; state.inboxHead = 0; state.inboxBytes = 0 }
            if state.inboxHead >= state.inbox.count, let reader = state.reader {
                state.reader = nil
                reader.resume(returning: nil)
            }
            return true
        }
        guard wasOpen else { return }
        if tellPeer { _ = relay.publish(seal.seal(CloudFrame(.close, fromDialler: key.dialledHere, link: key.id)), to: key.peer) }
        relay.forget(key)
    }
}

/// Names one link on this side: the peer at the other end, the dialler's random id, and whether
/// this side dialled (two peers dialling each other may draw the same id).
struct CloudLinkKey: Sendable, Hashable {
    let peer: PeerID
    let id: UInt64
    let dialledHere: Bool
}

/// What a link needs of its transport: a way to publish to its peer and to be forgotten.
struct CloudLinkRelay: Sendable {
    /// Publishes `frame` to `peer`; false when the relay connection refused it.
    let publish: @Sendable (_ frame: [UInt8], _ peer: PeerID) -> Bool
    let forget: @Sendable (CloudLinkKey) -> Void

    func publish(_ frame: [UInt8], to peer: PeerID) -> Bool { publish(frame, peer) }
}

/// Lets `incoming` reach the link without the stream keeping it alive in a cycle.
private final class LinkReader: @unchecked Sendable {
    // Set once in the link's initialiser, before the stream can be read.
    weak var link: CloudLink?
}

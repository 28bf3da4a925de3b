/// One session per peer over every link to it: the messages of `send` reach the peer's
/// `incoming` exactly once and in order, whichever links come and go underneath.
///
/// Every message gets a sequence number and stays in a bounded window until the peer's consumer
/// has taken it and said so (a cumulative ack, riding on data frames and heartbeats, or sent on
/// its own after `ackDelay`). The session sends on its best link (`LinkPreference`); when that
/// link closes or misses heartbeats, it moves to the next and resends everything unacknowledged,
/// and the receiver drops what it already has. While the best link is saturated, bulk traffic
/// also goes on the second-best one; the receiver puts the two streams back in order. With no
/// link at all, messages wait in the window and `events` says `.needsLink`.
///
/// Links are bound by a `Multiplexer` after their hello. A link is any `Link` — a secured one
/// drops in as it is. Call `close()` when done: the session's tasks hold it until then.
///
/// A peer that restarts (a new incarnation) has forgotten both directions. A consumer with state
/// that spans messages, such as a sync session, talks through `conversation(after:)`: one
/// `PeerConversation` per life of the peer, whose messages are dropped, not resent, once that
/// life is over. Simple consumers use `incoming` and `send`, which span the peer's lives. Use one
/// or the other: both read the same deliveries.
public actor PeerSession {
    public nonisolated let peer: PeerID
    public nonisolated let localPeer: PeerID
    public nonisolated let configuration: SessionConfiguration
    /// The peer's messages, whole, once each, in order, across its lives; finishes when the
    /// session closes. One consumer (not together with conversations).
    public nonisolated let incoming: AsyncStream<[UInt8]>
    /// Links added, removed and chosen; `needsLink` when none is left.
    public nonisolated let events: AsyncStream<SessionEvent>

    private nonisolated let eventSink: AsyncStream<SessionEvent>.Continuation
    private nonisolated let needsLink: @Sendable (PeerID) -> Void
    /// Where the peer's presence reports go (the multiplexer's presence exchange).
    private nonisolated let presenceReceived: @Sendable ([UInt8]) -> Void
    private let epoch = ContinuousClock.now

    // Links.
    private var links: [Int: AttachedLink] = [:]
    private var nextLinkNumber = 0
    private var activeLinkNumber: Int?
    /// The link that takes bulk traffic too while the active one is saturated.
    private var bulkLinkNumber: Int?
    private var peerIncarnation: UInt64?
    private var peerWindow: Int

    // Sending: the window of messages the peer has not acknowledged, oldest first.
    private var unacknowledged: [Outgoing] = []
    private var unacknowledgedBytes = 0
    private var nextSequence = 1
    /// The next sequence number a pump puts on a link.
    private var cursor = 1
    /// Messages a pump is handing to a link right now.
    private var sendsInFlight = 0
    private var roomWaiters: [(id: Int, continuation: CheckedContinuation<Void, any Error>)] = []
    private var nextWaiterID = 0
    private var pumpWaiters: [Lane: CheckedContinuation<Void, Never>] = [:]

    // Receiving.
    /// Every message up to this one has arrived (and is queued or taken).
    private var received = 0
    /// Every message up to this one has been taken by the consumer: what the acks say.
    private var consumed = 0
    private var ackSent = 0
    private var ackTimerRunning = false
    private var deliveries: [(generation: Int, payload: [UInt8])] = []
    private var deliveryHead = 0
    /// Messages that arrived ahead of a gap, by sequence number, until the gap fills: bulk on a
    /// second link overtakes the first. Never more than the window.
    private var ahead: [Int: [UInt8]] = [:]
    /// Grows when the peer restarts, so that messages of its earlier life are not counted in acks.
    private var peerGeneration = 0
    /// Conversations up to this generation were ended by their consumer.
    private var endedGeneration = -1
    private var conversationWaiters: [CheckedContinuation<Void, Never>] = []
    private var consumer: CheckedContinuation<Bool, Never>?
    private var duplicates = 0

    private var isClosed = false
    private var tasks: [Task<Void, Never>] = []
    private var lastTick = ContinuousClock.now
    private nonisolated var tickInterval: Duration { configuration.heartbeatInterval / 4 }

    private struct Outgoing {
        var sequence: Int
        let payload: [UInt8]
        /// The conversation (peer generation) it belongs to; nil when sent with plain `send`.
        let generation: Int?
        /// The link that carried it last, whose throughput its ack counts for.
        var link: Int?
    }

    /// The two pumps: one fills the active link, the other the bulk link while the active one is saturated.
    private enum Lane {
        case active, bulk
    }

    private struct AttachedLink {
        let channel: MessageChannel
        /// When the peer last sent anything on it, fragments included.
        let activity: LinkActivity
        let dialer: PeerID
        let dialID: UInt64
        let peerIncarnation: UInt64
        /// When the session bound it.
        let boundAt: ContinuousClock.Instant
        var lastHeartbeatSent: ContinuousClock.Instant
        /// How long the link has been silent, in ticks this process was awake for (see `tick`).
        var silence: Duration = .zero
        var heardAtLastTick: ContinuousClock.Instant
        var roundTrip: Duration?
        var roundTripSamples = 0
        var throughput = LinkThroughputMeter()
        var dataFramesReceived = 0
        // Control frames waiting for the link's control sender: at most one of each.
        var pendingReply: Int?
        var pendingHeartbeat: Int?
        var pendingAck = false
        var controlSending = false
        /// The link of the same kind that won the tie-break against this one, while it has not
        /// yet been heard from; a yielding link carries no traffic of ours.
        var yieldsTo: Int?

        var kind: LinkKind { channel.kind }
    }

    /// A session with no link yet; a `Multiplexer` makes these and binds links to them.
    init(
        localPeer: PeerID, peer: PeerID, configuration: SessionConfiguration, needsLink: @escaping @Sendable (PeerID) -> Void,
        presenceReceived: @escaping @Sendable ([UInt8]) -> Void = { _ in }
    ) {
        self.localPeer = localPeer
        self.peer = peer
        self.configuration = configuration
        self.needsLink = needsLink
        self.presenceReceived = presenceReceived
        self.peerWindow = configuration.window
        (events, eventSink) = AsyncStream.makeStream(of: SessionEvent.self, bufferingPolicy: .bufferingNewest(256))
        let reference = SessionReference()
        incoming = AsyncStream(unfolding: { await reference.session?.nextDelivery() })
        reference.session = self
    }

    /// Starts the heartbeat ticker and the pump the first time there is a message or a link.
    private func startIfNeeded() {
        guard tasks.isEmpty, !isClosed else { return }
        let tick = tickInterval
        lastTick = .now
        tasks.append(Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: tick)
                guard let self, !Task.isCancelled else { return }
                await self.tick()
            }
        })
        tasks.append(Task { await self.pump(.active) })
        tasks.append(Task { await self.pump(.bulk) })
    }

    // MARK: Sending

    /// Queues one message for the peer, suspending while the window is full (also while there is
    /// no link and the window has filled). Returns once the message is in the window, not once the
    /// peer has it. Throws `LinkError.messageTooLarge` over `maximumMessageSize`, `LinkError.closed`
    /// once the session is closed, `CancellationError` if cancelled while waiting.
    public func send(_ message: [UInt8]) async throws {
        try await send(message, in: nil)
    }

    /// Queues one message of conversation `generation` (nil: of none, kept across the peer's
    /// lives). Throws `LinkError.closed` once that conversation is over.
    func send(_ message: [UInt8], in generation: Int?) async throws {
        guard message.count <= configuration.maximumMessageSize else {
            throw LinkError.messageTooLarge(size: message.count, mtu: configuration.maximumMessageSize)
        }
        while true {
            if isClosed { throw LinkError.closed }
            if let generation, generation != peerGeneration || generation <= endedGeneration { throw LinkError.closed }
            if hasRoom(for: message.count) { break }
            try await waitForRoom()
        }
        startIfNeeded()
        unacknowledged.append(Outgoing(sequence: nextSequence, payload: message, generation: generation))
        unacknowledgedBytes += message.count
        nextSequence += 1
        wakePumps()
    }

    private func hasRoom(for size: Int) -> Bool {
        guard unacknowledged.count < min(configuration.window, peerWindow) else { return false }
        return unacknowledged.isEmpty || unacknowledgedBytes + size <= configuration.windowBytes
    }

    private func waitForRoom() async throws {
        let id = nextWaiterID
        nextWaiterID += 1
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                if Task.isCancelled { return continuation.resume(throwing: CancellationError()) }
                roomWaiters.append((id, continuation))
            }
        } onCancel: {
            Task { await self.cancelRoomWaiter(id) }
        }
    }

    private func cancelRoomWaiter(_ id: Int) {
        guard let index = roomWaiters.firstIndex(where: { $0.id == id }) else { return }
        roomWaiters.remove(at: index).continuation.resume(throwing: CancellationError())
    }

    /// Wakes every waiting sender to look again; each checks the window itself.
    private func wakeSenders() {
        let waiters = roomWaiters
        roomWaiters = []
        for waiter in waiters { waiter.continuation.resume() }
    }

    private func wakePumps() {
        let waiters = pumpWaiters.values
        pumpWaiters = [:]
        for waiter in waiters { waiter.resume() }
    }

    /// Puts the window on a link, one message after another, from `cursor`, which both lanes
    /// share: each message goes on one link (until a failover sends it again), and a link that
    /// drains faster takes more of them. The receiver puts them back in order.
    private func pump(_ lane: Lane) async {
        while !isClosed {
            guard let number = linkToFill(lane), let index = nextToTransmit() else {
                await withCheckedContinuation { pumpWaiters[lane] = $0 }
                continue
            }
            let message = unacknowledged[index]
            cursor = message.sequence + 1
            recordSending(index, on: number)
            ackSent = max(ackSent, consumed)
            let frame = SessionFrame.data(sequence: message.sequence, ack: consumed, payload: message.payload)
            let channel = links[number]!.channel
            // The active link's load decides whether the bulk lane joins in.
            wakePumps()
            sendsInFlight += 1
            do {
                try await channel.send(frame.encoded())
            } catch {
                detach(number, .closed)
            }
            sendsInFlight -= 1
        }
    }

    /// Waits until every message sent so far has been put on a link (not necessarily
    /// acknowledged): true then, false at `deadline` or when the session closes first. Before a
    /// clean stop closes the links, so that what was sent leaves rather than dying in the window.
    public func flush(until deadline: ContinuousClock.Instant) async -> Bool {
        while true {
            if cursor >= nextSequence && sendsInFlight == 0 { return true }
            if isClosed || ContinuousClock.now >= deadline { return false }
            // Polled rather than woken by the pumps: it runs once, at a stop, for a bounded time.
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// The link a lane sends on now: the active link; for bulk, the second link while more than
    /// `bulkThresholdBytes` of ours wait on the active one.
    private func linkToFill(_ lane: Lane) -> Int? {
        guard let active = activeLinkNumber, let activeLink = links[active] else { return nil }
        switch lane {
        case .active:
            return active
        case .bulk:
            guard let bulk = bulkLinkNumber, links[bulk] != nil,
                  activeLink.throughput.bytesInFlight >= configuration.preference.bulkThresholdBytes else { return nil }
            return bulk
        }
    }

    /// The index in `unacknowledged` of the next message to put on a link, if any waits.
    private func nextToTransmit() -> Int? {
        guard let first = unacknowledged.first else { return nil }
        cursor = max(cursor, first.sequence)
        let index = cursor - first.sequence
        return index < unacknowledged.count ? index : nil
    }

    /// Message `index` goes on link `number`: its bytes are in flight there, and no longer on the
    /// link that carried it before, if any.
    private func recordSending(_ index: Int, on number: Int) {
        let bytes = unacknowledged[index].payload.count
        if let previous = unacknowledged[index].link { links[previous]?.throughput.withdrawn(bytes) }
        unacknowledged[index].link = number
        links[number]!.throughput.sent(bytes, at: .now)
    }

    private func acknowledge(_ ack: Int) throws(SessionFrameError) {
        guard ack < nextSequence else { throw .ackBeyondSent(ack: ack, sent: nextSequence - 1) }
        var removed = 0
        while removed < unacknowledged.count, unacknowledged[removed].sequence <= ack {
            unacknowledgedBytes -= unacknowledged[removed].payload.count
            removed += 1
        }
        guard removed > 0 else { return }
        let now = ContinuousClock.now
        var sampled = false
        for message in unacknowledged[..<removed] {
            guard let number = message.link, links[number] != nil else { continue }
            if links[number]!.throughput.acknowledged(message.payload.count, at: now) { sampled = true }
        }
        unacknowledged.removeFirst(removed)
        wakeSenders()
        if sampled { chooseActiveLink() }
        wakePumps()
    }

    // MARK: Receiving

    /// Handles one frame that arrived on link `number`; a frame that breaks the protocol closes
    /// that link (not the session).
    func receive(_ bytes: [UInt8], on number: Int) {
        guard links[number] != nil else { return }
        do throws(SessionFrameError) {
            switch try SessionFrame(decoding: bytes) {
            case .hello:
                throw .repeatedHello
            case .data(let sequence, let ack, let payload):
                try acknowledge(ack)
                try accept(sequence: sequence, payload: payload, on: number)
            case .ack(let ack):
                try acknowledge(ack)
            case .heartbeat(let nonce, let ack):
                try acknowledge(ack)
                links[number]!.pendingReply = nonce
                startControlSender(on: number)
            case .heartbeatReply(let nonce):
                let sample = ContinuousClock.now - (epoch + .nanoseconds(nonce))
                guard sample >= .zero else { return }
                // Smoothed as TCP does, so that one late reply does not move traffic.
                links[number]!.roundTrip = links[number]!.roundTrip.map { ($0 * 7 + sample) / 8 } ?? sample
                links[number]!.roundTripSamples += 1
                chooseActiveLink()
            case .presence(let report):
                presenceReceived(report)
            }
            closeLinksYielding(to: number)
        } catch {
            detach(number, .peerViolation(error))
        }
    }

    private func accept(sequence: Int, payload: [UInt8], on number: Int) throws(SessionFrameError) {
        guard sequence > 0 else { throw .zeroSequence }
        guard payload.count <= configuration.maximumMessageSize else {
            throw .messageTooLarge(size: payload.count, limit: configuration.maximumMessageSize)
        }
        // The peer may not have more than our window unacknowledged; this bounds `deliveries`.
        let limit = consumed + configuration.window
        guard sequence <= limit else { throw .beyondWindow(sequence: sequence, limit: limit) }
        links[number]!.dataFramesReceived += 1
        guard sequence > received else {
            duplicates += 1
            return
        }
        // Ahead of a gap: bulk on another link overtook it, or a failover resends it. The window
        // bounds how many wait here.
        guard sequence == received + 1 else {
            if ahead.updateValue(payload, forKey: sequence) != nil { duplicates += 1 }
            return
        }
        deliver(payload)
        while let next = ahead.removeValue(forKey: received + 1) { deliver(next) }
    }

    private func deliver(_ payload: [UInt8]) {
        received += 1
        deliveries.append((peerGeneration, payload))
        consumer?.resume(returning: false)
        consumer = nil
    }

    /// The consumer's next message, or nil once the session is closed or the consumer cancelled.
    /// For conversation `conversation`, also nil once that life of the peer is over or the
    /// conversation ended; what an earlier life sent and no one took is dropped.
    func nextDelivery(of conversation: Int? = nil) async -> [UInt8]? {
        while true {
            if isClosed { return nil }
            if let conversation, conversation <= endedGeneration { return nil }
            if deliveryHead < deliveries.count {
                let (generation, payload) = deliveries[deliveryHead]
                // The peer's next life: for the next conversation.
                if let conversation, generation > conversation { return nil }
                deliveryHead += 1
                if deliveryHead >= 64, deliveryHead * 2 >= deliveries.count {
                    deliveries.removeFirst(deliveryHead)
                    deliveryHead = 0
                }
                if generation == peerGeneration {
                    consumed += 1
                    scheduleAck()
                }
                if let conversation, generation < conversation { continue }
                return payload
            }
            if let conversation, conversation < peerGeneration { return nil }
            let cancelled = await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                    if Task.isCancelled { return continuation.resume(returning: true) }
                    consumer = continuation
                }
            } onCancel: {
                Task { await self.cancelConsumer() }
            }
            if cancelled { return nil }
        }
    }

    private func cancelConsumer() {
        consumer?.resume(returning: true)
        consumer = nil
    }

    /// Acks ride on data frames; one goes alone after `ackDelay`, or at once when a quarter of
    /// the window is waiting for it, so the peer never stalls on a full window.
    private func scheduleAck() {
        if consumed - ackSent >= max(1, configuration.window / 4) { return sendAck() }
        guard !ackTimerRunning else { return }
        ackTimerRunning = true
        let delay = configuration.ackDelay
        Task {
            try? await Task.sleep(for: delay)
            self.ackTimerFired()
        }
    }

    private func ackTimerFired() {
        ackTimerRunning = false
        if consumed > ackSent { sendAck() }
    }

    private func sendAck() {
        guard let number = activeLinkNumber ?? links.keys.min() else { return }
        links[number]!.pendingAck = true
        startControlSender(on: number)
    }

    // MARK: Control frames

    /// Sends a link's pending acks, heartbeats and replies from a task of its own, so that neither
    /// the reader nor the pump ever waits on a saturated link for them.
    private func startControlSender(on number: Int) {
        guard let link = links[number], !link.controlSending else { return }
        links[number]!.controlSending = true
        Task { await self.sendControlFrames(on: number) }
    }

    private func sendControlFrames(on number: Int) async {
        while let (channel, frame) = nextControlFrame(on: number) {
            do {
                try await channel.send(frame.encoded())
            } catch {
                detach(number, .closed)
                return
            }
        }
    }

    private func nextControlFrame(on number: Int) -> (MessageChannel, SessionFrame)? {
        guard let link = links[number] else { return nil }
        if let nonce = link.pendingReply {
            links[number]!.pendingReply = nil
            return (link.channel, .heartbeatReply(nonce: nonce))
        }
        if let nonce = link.pendingHeartbeat {
            links[number]!.pendingHeartbeat = nil
            ackSent = max(ackSent, consumed)
            return (link.channel, .heartbeat(nonce: nonce, ack: consumed))
        }
        if link.pendingAck {
            links[number]!.pendingAck = false
            ackSent = max(ackSent, consumed)
            return (link.channel, .ack(consumed))
        }
        links[number]!.controlSending = false
        return nil
    }

    /// Sends heartbeats that are due and declares silent links dead.
    ///
    /// Silence is counted tick by tick, each tick adding at most two tick intervals: when this
    /// process is starved (a busy CPU holds every thread for a second), nothing could have been
    /// read either, and that time is not the peer's silence. Lateness that persists still adds
    /// up, so a dead link is always found.
    private func tick() {
        let now = ContinuousClock.now
        let elapsed = min(now - lastTick, tickInterval * 2)
        lastTick = now
        for number in links.keys.sorted() {
            guard let link = links[number] else { continue }
            let heard = link.activity.lastHeardAt
            if heard > link.heardAtLastTick {
                links[number]!.heardAtLastTick = heard
                links[number]!.silence = min(now - heard, elapsed)
            } else {
                links[number]!.silence += elapsed
            }
            let metrics = link.channel.metrics
            if links[number]!.silence > configuration.deadAfter(for: metrics) {
                detach(number, .heartbeatsMissed)
                continue
            }
            if now - link.lastHeartbeatSent >= configuration.heartbeatInterval(for: metrics) {
                sendHeartbeat(on: number, now: now)
            }
        }
    }

    private func sendHeartbeat(on number: Int, now: ContinuousClock.Instant) {
        links[number]!.lastHeartbeatSent = now
        let (seconds, attoseconds) = (now - epoch).components
        links[number]!.pendingHeartbeat = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        startControlSender(on: number)
    }

    // MARK: Links

    /// Binds a link whose hello named this session's peer. Returns the link's number, or nil if
    /// the session is closed.
    func attach(_ channel: MessageChannel, activity: LinkActivity, dialer: PeerID, dialID: UInt64, hello: LinkHello) -> Int? {
        guard !isClosed else {
            channel.close()
            return nil
        }
        startIfNeeded()
        if let known = peerIncarnation, known != hello.incarnation { peerRestarted() }
        peerIncarnation = hello.incarnation
        peerWindow = hello.receiveWindow

        let number = nextLinkNumber
        nextLinkNumber += 1
        let now = ContinuousClock.now
        let link = AttachedLink(
            channel: channel, activity: activity, dialer: dialer, dialID: dialID, peerIncarnation: hello.incarnation,
            boundAt: now, lastHeartbeatSent: now, heardAtLastTick: activity.lastHeardAt
        )
        links[number] = link
        eventSink.yield(.linkAdded(status(of: link, number: number)))
        settleDuplicates(of: link.kind)
        // Measure the round trip at once, and tell the peer where we are after a reconnect.
        sendHeartbeat(on: number, now: now)
        chooseActiveLink()
        return number
    }

    /// Both peers dialled on one transport, or one redialled while the old link had gone silent:
    /// of the links of one kind, the tie-break's winner carries traffic and the others yield to
    /// it. Both ends know who dialled each link, so both pick the same winner; only links that
    /// exist are compared, so a failed dial never stalls anything. A yielding link closes once the
    /// winner is heard from (`closeLinksYielding(to:)`), and takes over if the winner dies first —
    /// so a new link is never thrown away for an old one that is already dead but not yet known to be.
    private func settleDuplicates(of kind: LinkKind) {
        let sameKind = links.filter { $0.value.kind == kind }
        guard sameKind.count > 1 else {
            if let only = sameKind.keys.first { links[only]!.yieldsTo = nil }
            return
        }
        let winner = sameKind.max { a, b in
            Self.survives(dialer: b.value.dialer, dialID: b.value.dialID, against: a.value.dialer, a.value.dialID)
        }!.key
        for number in sameKind.keys { links[number]!.yieldsTo = number == winner ? nil : winner }
        // Its reply proves the winner alive, and lets the others go.
        sendHeartbeat(on: winner, now: .now)
    }

    /// Link `number` is alive: the links that yielded to it are duplicates.
    private func closeLinksYielding(to number: Int) {
        for (other, link) in links where link.yieldsTo == number {
            detach(other, .duplicate, replacing: true)
        }
    }

    /// The tie-break between two links of one kind: the one dialled by the smaller peer id; of
    /// two dialled by the same peer, the newer.
    static func survives(dialer: PeerID, dialID: UInt64, against otherDialer: PeerID, _ otherDialID: UInt64) -> Bool {
        dialer == otherDialer ? dialID > otherDialID : dialer < otherDialer
    }

    /// The reader of link `number` found its end.
    func linkEnded(_ number: Int, violation: FragmentationError?) {
        detach(number, violation.map(LinkRemoval.fragmentViolation) ?? .closed)
    }

    /// Lets go of link `number`. `replacing` says a new link is being bound right now, so the
    /// session does not ask for one.
    private func detach(_ number: Int, _ reason: LinkRemoval, replacing: Bool = false) {
        guard let link = links.removeValue(forKey: number) else { return }
        link.channel.close()
        eventSink.yield(.linkRemoved(status(of: link, number: number), reason))
        if activeLinkNumber == number { activeLinkNumber = nil }
        // What it carried and the peer has not acknowledged may be lost with it: send it again.
        if let lost = unacknowledged.first(where: { $0.link == number }) { cursor = min(cursor, lost.sequence) }
        if links.values.contains(where: { $0.yieldsTo == number }) { settleDuplicates(of: link.kind) }
        chooseActiveLink()
        if links.isEmpty, !isClosed, !replacing {
            eventSink.yield(.needsLink)
            needsLink(peer)
        }
    }

    /// Moves traffic to the best link; on a change, everything unacknowledged goes again, since
    /// what was in flight on the old link may be lost.
    private func chooseActiveLink() {
        let preference = configuration.preference
        let eligible = links.filter { $0.value.yieldsTo == nil }
        let best = bestLink(among: eligible)
        bulkLinkNumber = best.flatMap { best in
            bestLink(among: eligible.filter { $0.key != best }).flatMap { second in
                preference.helps(candidate(links[second]!), alongside: candidate(links[best]!)) ? second : nil
            }
        }
        guard best != activeLinkNumber else { return wakePumps() }
        activeLinkNumber = best
        cursor = unacknowledged.first?.sequence ?? nextSequence
        if let best {
            // Our last ack may have gone down with the old link.
            links[best]!.pendingAck = consumed > 0
            startControlSender(on: best)
        }
        eventSink.yield(.activeLinkChanged(best.flatMap { number in links[number].map { status(of: $0, number: number) } }))
        wakePumps()
    }

    private func bestLink(among candidates: [Int: AttachedLink]) -> Int? {
        let preference = configuration.preference
        return candidates.min { a, b in
            let (first, second) = (candidate(a.value), candidate(b.value))
            if preference.prefers(first, over: second) { return true }
            if preference.prefers(second, over: first) { return false }
            return a.key < b.key
        }?.key
    }

    /// A link as `LinkPreference` weighs it. A round trip counts once a few heartbeats have
    /// measured it, and a throughput once a few busy periods have: one late reply or one burst
    /// must not move traffic off the preferred link. Until then the transport's rate stands in.
    private func candidate(_ link: AttachedLink) -> LinkPreference.Candidate {
        LinkPreference.Candidate(
            kind: link.kind,
            roundTrip: link.roundTripSamples >= 4 ? link.roundTrip : nil,
            throughput: link.throughput.trustedBytesPerSecond ?? link.channel.metrics.bytesPerSecond
        )
    }

    /// The peer came back with a new incarnation: it has forgotten both directions. Its old links
    /// go, our receive state restarts, the messages of the conversation with its earlier life are
    /// dropped (it is over: a new one begins), and the rest unacknowledged are renumbered from 1.
    private func peerRestarted() {
        for number in links.keys.sorted() { detach(number, .peerRestarted, replacing: true) }
        peerGeneration += 1
        received = 0
        consumed = 0
        ackSent = 0
        ahead = [:]
        unacknowledged.removeAll { $0.generation != nil }
        unacknowledgedBytes = unacknowledged.reduce(0) { $0 + $1.payload.count }
        for index in unacknowledged.indices {
            unacknowledged[index].sequence = index + 1
            unacknowledged[index].link = nil
        }
        nextSequence = unacknowledged.count + 1
        cursor = 1
        wakeSenders()
        // The last conversation's consumer sees its end; whoever waits for the next one has it.
        consumer?.resume(returning: false)
        consumer = nil
        wakeConversationWaiters()
    }

    // MARK: Conversations

    /// The conversation with the peer's life after `generation` (nil: its current life), as soon
    /// as there is one; nil once the session is closed.
    public func conversation(after generation: Int?) async -> PeerConversation? {
        while !isClosed {
            if generation.map({ peerGeneration > $0 }) ?? true {
                return PeerConversation(session: self, generation: peerGeneration)
            }
            await withCheckedContinuation { conversationWaiters.append($0) }
        }
        return nil
    }

    /// Ends conversation `generation` from this side: its stream finishes and it sends no more.
    /// The session and its links go on; the next conversation begins when the peer restarts.
    func endConversation(_ generation: Int) {
        endedGeneration = max(endedGeneration, generation)
        wakeSenders()
        consumer?.resume(returning: false)
        consumer = nil
    }

    private func wakeConversationWaiters() {
        let waiters = conversationWaiters
        conversationWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    private func status(of link: AttachedLink, number: Int) -> SessionLinkStatus {
        SessionLinkStatus(
            number: number, kind: link.kind, name: link.channel.link.description, dialer: link.dialer,
            dialID: link.dialID, roundTrip: link.roundTrip, isActive: activeLinkNumber == number, isYielding: link.yieldsTo != nil,
            dataFramesReceived: link.dataFramesReceived, boundAt: link.boundAt
        )
    }

    // MARK: Presence

    /// Sends a presence report on the active link, best effort: no sequence number, no ack, no
    /// resend (the next report replaces a lost one). Returns false when there is no link to send on.
    func sendPresence(_ report: [UInt8]) -> Bool {
        guard let number = activeLinkNumber, let channel = links[number]?.channel else { return false }
        // Its own task, so that the caller never waits on a saturated link; the report takes its turn.
        Task { try? await channel.send(SessionFrame.presence(report).encoded()) }
        return true
    }

    // MARK: Observing and closing

    /// Closes the session's links of `kind`, to make room on a transport with few links
    /// (`ScarceLinkBudget`); the session goes on over its other links, or waits for one.
    public func release(linksOf kind: LinkKind) {
        for (number, link) in links where link.kind == kind { detach(number, .released) }
    }

    /// The links bound now, oldest first.
    public var linkStatuses: [SessionLinkStatus] {
        links.keys.sorted().map { status(of: links[$0]!, number: $0) }
    }

    /// The link this side sends on, if any.
    public var activeLink: SessionLinkStatus? {
        activeLinkNumber.flatMap { number in links[number].map { status(of: $0, number: number) } }
    }

    /// Each link's figures as the choice of link sees them, oldest first: for status and presence.
    public var linkFigures: [SessionLinkFigures] {
        links.keys.sorted().map { number in
            let link = links[number]!
            return SessionLinkFigures(
                number: number, kind: link.kind, roundTrip: link.roundTrip,
                throughput: candidate(link).throughput, isThroughputMeasured: link.throughput.trustedBytesPerSecond != nil,
                isActive: number == activeLinkNumber, carriesBulk: number == bulkLinkNumber
            )
        }
    }

    /// Messages sent but not yet acknowledged, and their bytes: never more than the window.
    public var unacknowledgedMessages: (count: Int, bytes: Int) { (unacknowledged.count, unacknowledgedBytes) }

    /// Data frames that arrived again (after a failover) and were dropped.
    public var duplicatesDropped: Int { duplicates }

    /// Where sending and receiving stand, in one line: for a failure that says why nothing moves.
    public var diagnosis: String {
        let lanes = [Lane.active, .bulk].map { lane in pumpWaiters[lane] == nil ? "busy" : "waiting" }
        let perLink = links.keys.sorted().map { number in
            let link = links[number]!
            return "#\(number)[control \(link.controlSending ? "sending" : "idle"), reply \(link.pendingReply != nil), "
                + "heartbeat \(link.pendingHeartbeat != nil), ack \(link.pendingAck), data in \(link.dataFramesReceived), "
                + "silence \(link.silence), yields to \(link.yieldsTo.map(String.init) ?? "none")]"
        }
        return "\(isClosed ? "closed, " : "")tasks \(tasks.count), sent \(nextSequence - 1), cursor \(cursor), in flight \(sendsInFlight), unacknowledged \(unacknowledged.map(\.sequence)) "
            + "on links \(unacknowledged.map { $0.link.map(String.init) ?? "-" }), pumps active \(lanes[0]) bulk \(lanes[1]), "
            + "received \(received), consumed \(consumed), ack sent \(ackSent), duplicates \(duplicates), generation \(peerGeneration), "
            + "active link \(activeLinkNumber.map(String.init) ?? "none"), links \(perLink.joined(separator: " "))"
    }

    /// Closes every link, fails waiting and later sends, finishes `incoming` and `events`.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        for number in links.keys.sorted() { detach(number, .sessionClosed) }
        let waiters = roomWaiters
        roomWaiters = []
        for waiter in waiters { waiter.continuation.resume(throwing: LinkError.closed) }
        consumer?.resume(returning: false)
        consumer = nil
        wakeConversationWaiters()
        wakePumps()
        for task in tasks { task.cancel() }
        eventSink.finish()
    }
}

/// Lets `incoming`, made before the session exists, reach it. Set once in the session's
/// initialiser before anyone can read the stream; weak so the stream does not keep it alive.
private final class SessionReference: @unchecked Sendable {
    // Written once, in PeerSession.init, before `incoming` escapes; read-only after that.
    weak var session: PeerSession?
}

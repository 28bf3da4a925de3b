import ArcusCRDT
import ArcusCodec
import ArcusStore
import Foundation
import Synchronization

/// The protocol spoken with one peer over one channel.
///
/// ```
/// each side:  hello
/// subscriber: [subscribe] [missing(id, keys)] summary(id, what it has, or its 8-byte digest)
/// server:     delta batch(id, …)* — the one that completes the answer says so (`answers`), and
///             `covers` what the server vouches for when the subscriber does not know it yet
/// subscriber: ack(id, position)                           per batch with a position
/// then, while the session lives: delta batches as the server's store changes
/// ```
///
/// Two loops run per session: one reads and handles the peer's frames in order (merges happen
/// there), one sends. The sender picks by priority — control messages, then live changes, then
/// backfill, then attachment chunks — and produces each batch only when the channel can take
/// it, so a slow link never makes memory grow. Control messages the peer's frames cause are
/// bounded too: past `queueLimit` queued, the receiver stops reading until the link takes
/// them. A malformed or hostile frame ends the session with a logged reason; the merge it
/// carried, if any, is rolled back whole.
public actor SyncSession {
    /// Wire protocol version; a peer speaking another is refused.
    public static let protocolVersion: UInt16 = 1

    // Strong: a running session keeps its engine alive; the engine forgets it when it ends.
    let engine: SyncEngine
    nonisolated let channel: any SyncChannel
    nonisolated let pulling: Bool
    /// What the peer may read and write (see `SyncPermissions`).
    public nonisolated let permissions: SyncPermissions
    /// Most documents in one delta batch: `Options.batchSize`, or sized to the link — about 64
    /// bytes a document in one preferred frame, between 16 and 2,048. A small frame (BLE) keeps
    /// a batch short, so live changes never wait long behind the backfill; a large one (LAN)
    /// keeps a backfill in few frames, each compressed whole.
    nonisolated let batchSize: Int
    var store: Store { engine.store }

    var encoder = FrameEncoder()
    var decoder = FrameDecoder()
    /// The peer's identity once its hello arrived; nil before.
    public private(set) var peerID: [UInt8]?
    public private(set) var peerName = ""
    /// Positions to acknowledge, per subscription, once `acknowledgementDelay` has passed.
    var pendingAcks: [UInt64: UInt64] = [:]
    var ackScheduled = false
    /// The peer's site, when its id is one (as every Arcus store's is): it has all its own
    /// events, so none is ever sent to it.
    var peerSite: SiteID?
    var peerKey = ""
    /// Whether the peer's batches may carry a backlog (its hello says it reads them).
    var peerReadsBacklog = false
    /// Whether the peer reads reaped horizons and answers them with checks (its hello says so).
    var peerReadsReapedHorizons = false
    /// Subscriber: reaped horizons noticed before the subscription's answer was complete.
    var pendingReapNotices: [UInt64: VersionVector] = [:]
    /// Subscriber: checks under way against the peer's reaped horizons, per subscription.
    var reapChecks: [UInt64: ReapCheckProgress] = [:]
    /// The bytes of the frame being handled.
    var frameBytes = 0
    public internal(set) var statistics = SyncStatistics()
    /// Why the session ended; nil while it runs.
    public private(set) var endReason: String?

    /// Messages that go before any data: hello, subscriptions, summaries, acks, errors.
    var control: [SyncMessage] = []
    /// Most control messages and attachment requests queued before the receiver waits for the
    /// link to take some (a peer cannot make this side's memory grow by asking faster than
    /// the link answers).
    static let queueLimit = 256
    /// The peer's subscriptions this side serves, by the peer's id for them.
    var served: [UInt64: ServedSubscription] = [:] {
        didSet { noteEagerlyServed() }
    }
    /// The peer's subscriptions refused for asking for a collection it may not read (which
    /// one): each of their summaries gets `notPermitted`.
    var refusedSubscriptions: [UInt64: String] = [:]
    /// Subscriptions of this store announced to the peer, and whether each is caught up.
    var announced: [UInt64: Bool] = [:]
    /// Per announced subscription, what the peer remembers this store has of it.
    var peerKnowsOfMine: [UInt64: VersionVector] = [:]
    /// Per announced subscription, summaries sent that the peer has not answered yet.
    var unanswered: [UInt64: Int] = [:]
    /// Per announced subscription, the evicted documents the latest summary asked for by key.
    var listedMissing: [UInt64: Set<DocumentKey>] = [:]
    /// Per announced subscription, how long to wait before asking again for documents still missing.
    var askAgainDelay: [UInt64: Double] = [:]
    /// Per announced subscription, the documents asked for by key that came since, with the
    /// versions they came with (what the peer has seen of each).
    var receivedListed: [UInt64: [DocumentKey: VersionVector]] = [:]
    /// Per announced subscription, how many evictions it had seen when the latest summary went.
    var announcedAfter: [UInt64: UInt64] = [:]
    /// Per document, events the peer is known to have (it sent them, or was sent them).
    var peerHas: [DocumentKey: VersionVector] = [:]
    /// Refusals not yet logged (see `report`).
    var refusalLog = RefusalLog()
    /// Whether the peer reads `credentials` messages (its hello says so).
    var peerReadsCredentials = false
    /// Whether the peer reads push notes (its hello says so): it can be asked to push lazily.
    var peerReadsPushNotes = false
    /// Whether both hellos list `ConflictKnowledge.capability` (both stores keep conflicts): each
    /// side then says, in each document it serves, what it had seen of the other's events.
    var peerSaysWhatItSaw = false
    /// This store's subscriptions the peer was asked to push lazily (read by the engine, from
    /// any thread, to keep one eager path per subscription).
    nonisolated let lazyAsked = Mutex<Set<UInt64>>([])
    /// The collections of the peer's subscriptions this side pushes eagerly (nil: every
    /// collection), by subscription id: read by the engine, from any thread, so that a lazy
    /// request is taken only while another peer still gets this store's changes at once.
    nonisolated let eagerlyServed = Mutex<[UInt64: String?]>([:])
    /// A batch produced after the credentials that go ahead of it, which were sent first.
    var heldBatch: DeltaBatch?
    /// Attachment ranges the peer asked for, served in order.
    var chunkRequests: [AttachmentRequest] = []

    /// Whether the peer's hello arrived and the session has not ended (read from any thread).
    nonisolated let readiness = Mutex(false)
    /// `peerDescription`, for logs written from any thread.
    nonisolated let peerLabel = Mutex("a peer (before its hello)")
    /// `peerID`, for attachment fetches deciding from any thread whom to ask.
    nonisolated let helloPeerID = Mutex<[UInt8]?>(nil)
    private nonisolated let doorbell: AsyncStream<Void>.Continuation
    private var doorbellStream: AsyncStream<Void>?
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private var catchUpWaiters: [CheckedContinuation<Bool, Never>] = []
    private var idleWaiters: [CheckedContinuation<Void, Never>] = []
    /// Waiting for `statistics.framesReceived` to reach a count (`waitUntilReceived`).
    private var receiptWaiters: [(frames: Int, waiter: CheckedContinuation<Void, Never>)] = []
    /// Whether the sender last found nothing to send (and no message was queued since).
    private var isIdle = false
    /// The receiver, waiting for the queues to drain below `queueLimit`.
    private var drainWaiter: CheckedContinuation<Void, Never>?
    /// Whether the peer broke the protocol: nothing more it sent is handled.
    private var violated = false
    /// Whether both loops are done: the session ended and handled everything it received.
    private var finished = false

    /// The engine's queue, shared by its sessions: their merges and reads call the store
    /// synchronously, and must not hold threads of the cooperative pool while they wait (see
    /// `DispatchQueueExecutor`).
    public nonisolated var unownedExecutor: UnownedSerialExecutor { engine.sessionExecutor.asUnownedSerialExecutor() }

    init(engine: SyncEngine, channel: any SyncChannel, pulling: Bool, permissions: SyncPermissions = .all,
         continuing continuation: CodecContinuation? = nil) {
        if let encoding = continuation?.encoding { encoder.context = encoding }
        if let decoding = continuation?.decoding { decoder.context = decoding }
        self.engine = engine
        self.channel = channel
        self.pulling = pulling
        self.permissions = permissions
        // Never more documents than a receiver's decoder takes in one batch.
        batchSize = engine.options.batchSize.map { min(max($0, 1), CodecLimits.standard.maximumDocumentsPerBatch) }
            ?? min(max(channel.preferredFrameSize / 64, 16), 2048)
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        doorbell = continuation
        doorbellStream = stream
    }

    nonisolated func start() {
        Task { await self.run() }
    }

    private func run() async {
        control.append(.hello(engine.hello))
        let sender = Task { await self.sendLoop() }
        await receiveLoop()
        sender.cancel()
        ring()
        _ = await sender.value
        finished = true
        for waiter in waiters { waiter.resume() }
        waiters.removeAll()
    }

    /// The codec contexts both directions ended with, for a later session with the same peer to
    /// go on from (`CodecContinuation`); nil until the session has ended, and after the peer broke
    /// the protocol (its frames may not have been decoded to the end).
    public var codecContinuation: CodecContinuation? {
        guard finished, !violated else { return nil }
        return CodecContinuation(encoding: encoder.context, decoding: decoder.context)
    }

    /// Wakes the sender: the store changed, or there is something to send.
    nonisolated func ring() { doorbell.yield() }

    // MARK: - Receiving

    /// Handles the peer's frames in order. Frames that arrived before the channel closed are
    /// still handled (an acknowledgement in them counts); after a protocol violation, none is.
    private func receiveLoop() async {
        for await frame in channel.incoming {
            guard !violated else { break }
            while queuedMessages >= Self.queueLimit, endReason == nil {
                await withCheckedContinuation { drainWaiter = $0 }
            }
            statistics.framesReceived += 1
            statistics.bytesReceived += frame.count
            if !receiptWaiters.isEmpty { frameReceived() }
            frameBytes = frame.count
            do {
                guard let message = try decoder.decode(frame) else { continue }  // an unknown type, skipped
                try handle(message)
            } catch {
                violated = true
                end("the peer sent a frame that breaks the protocol: \(error)", level: .error, notify: true)
                break
            }
        }
        end("the channel closed", level: .info, notify: false)
    }

    /// Control messages and attachment requests waiting for the link.
    var queuedMessages: Int { control.count + chunkRequests.count }

    /// Lets the receiver go on once the queues are below the limit.
    func queueDrained() {
        guard queuedMessages < Self.queueLimit || endReason != nil, let waiter = drainWaiter else { return }
        drainWaiter = nil
        waiter.resume()
    }

    private func handle(_ message: SyncMessage) throws {
        if case .hello(let hello) = message {
            try receivedHello(hello)
            return
        }
        guard peerID != nil else { throw SyncProtocolError("a \(message.type) message arrived before the peer's hello") }
        switch message {
        case .hello: break
        case .subscribe(let subscribe): receivedSubscribe(subscribe)
        case .unsubscribe(let id): receivedUnsubscribe(id)
        case .summary(let summary): try receivedSummary(summary)
        case .deltaBatch(let batch): try receivedBatch(batch)
        case .ack(let ack): receivedAck(ack)
        case .attachmentRequest(let request): receivedAttachmentRequest(request)
        case .attachmentChunk(let chunk): receivedAttachmentChunk(chunk)
        case .error(let error): try receivedError(error)
        case .missing(let missing): try receivedMissing(missing)
        case .credentials(let credentials): engine.options.origins?.receive(credentials.items, from: peerDescription)
        case .pushNote(let note): receivedPushNote(note)
        case .reapedHorizon(let horizon): try receivedReapedHorizon(horizon)
        case .reapCheck(let check): try receivedReapCheck(check)
        }
    }

    private func receivedHello(_ hello: Hello) throws {
        guard peerID == nil else { throw SyncProtocolError("a second hello") }
        guard hello.protocolVersion == Self.protocolVersion else {
            send(.error(SyncError(code: SyncErrorCode.incompatibleVersion.rawValue,
                                  message: "this peer speaks sync protocol \(Self.protocolVersion), not \(hello.protocolVersion)")))
            throw SyncProtocolError("the peer speaks sync protocol \(hello.protocolVersion); this one speaks \(Self.protocolVersion)")
        }
        // The peer id is the peer's site: its writes are its own by it, so it is never optional.
        guard let site = SiteID(peerID: hello.peerID) else {
            throw SyncProtocolError("the peer id is \(hello.peerID.count) bytes; a sync peer id is a site id, 8 bytes")
        }
        guard hello.peerID != engine.peerID else { throw SyncProtocolError("the peer has this store's own id") }
        peerID = hello.peerID
        peerSite = site
        // Neither side sends anything after its hello until it has the other's: from here on
        // each direction knows both sites (the speaker's own went in with its hello), so
        // version vectors and stamps name either in a byte.
        if let peerSite { encoder.context.intern(peerSite) }
        decoder.context.intern(engine.store.site)
        peerName = hello.name
        peerReadsBacklog = hello.capabilities.contains(SyncBacklog.capability)
        peerReadsReapedHorizons = hello.capabilities.contains(ReapedHorizon.capability)
        peerReadsCredentials = hello.capabilities.contains(Credentials.capability)
        peerReadsPushNotes = hello.capabilities.contains(PushNote.capability)
        peerSaysWhatItSaw = hello.capabilities.contains(ConflictKnowledge.capability) && engine.store.conflictsPerField > 0
        if peerReadsCredentials, let announcements = engine.options.origins?.announcements, !announcements.isEmpty {
            send(.credentials(Credentials(items: announcements)))
        }
        peerKey = hello.peerID.map { $0 < 16 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
        if pulling {
            for id in engine.activeSubscriptionIDs { announce(now: id) }
        }
        let label = peerDescription
        peerLabel.withLock { $0 = label }
        helloPeerID.withLock { $0 = hello.peerID }
        readiness.withLock { $0 = true }
        engine.attachments.sessionReady(self)
        // A side that announces nothing is caught up as soon as the peer has spoken.
        caughtUpChanged()
    }

    private func receivedError(_ error: SyncError) throws {
        switch SyncErrorCode(rawValue: error.code) {
        case .unknownSubscription?, .needSummary?:
            // The peer forgot (or never had) a subscription this side announced briefly: say it whole.
            guard let id = UInt64(error.message), announced[id] != nil else { return }
            summaryRefused(id)
            announce(now: id, whole: true)
        case .attachmentNotFound?:
            notFound(hashHex: error.message)
        case .badSubscription?:
            engine.options.log(.warning, "peer \(peerDescription) refused a subscription: \(error.message)")
        case .notPermitted?:
            // "<id> <why>": the peer will not serve it on this session. Nothing more will come,
            // so it counts as answered (waiting for it would never end).
            let id = error.message.split(separator: " ", maxSplits: 1).first.flatMap { UInt64($0) }
            engine.options.log(.warning, "peer \(peerDescription) refused subscription \(id.flatMap { engine.subscription($0)?.query.text } ?? "?"): \(error.message)")
            guard let id, announced[id] != nil else { return }
            unanswered[id] = 0
            listedMissing[id] = nil
            announced[id] = true
            caughtUpChanged()
        default:
            throw SyncProtocolError("the peer ended the session: \(error.message)")
        }
    }

    // MARK: - Sending

    /// Sends `credentials` if the peer reads them (from any thread).
    nonisolated func pass(_ credentials: Credentials) {
        Task { await self.passNow(credentials) }
    }

    private func passNow(_ credentials: Credentials) {
        guard peerReadsCredentials, endReason == nil else { return }
        send(.credentials(credentials))
    }

    /// Queues a control message. An acknowledgement replaces one still queued for the same
    /// subscription: the later position says all the earlier one did.
    func send(_ message: SyncMessage) {
        if case .ack(let ack) = message, let index = control.firstIndex(where: {
            if case .ack(let queued) = $0 { return queued.subscriptionID == ack.subscriptionID } else { return false }
        }) {
            if case .ack(let queued) = control[index], queued.position < ack.position { control[index] = message }
            return
        }
        control.append(message)
        isIdle = false
        ring()
    }

    private func sendLoop() async {
        guard var doorbells = doorbellStream?.makeAsyncIterator() else { return }
        doorbellStream = nil
        while endReason == nil, !Task.isCancelled {
            do {
                if let message = try nextMessage() {
                    isIdle = false
                    let frame = encoder.encode(message)
                    queueDrained()
                    try await channel.send(frame)
                    statistics.framesSent += 1
                    statistics.bytesSent += frame.count
                    if case .deltaBatch(let batch) = message {
                        statistics.documentsSent += batch.documents.count
                        if batch.backlog != nil { served[batch.subscriptionID]?.backlog?.sent(frameBytes: frame.count) }
                    }
                    continue
                }
            } catch {
                end("sending failed: \(error)", level: .info, notify: false)
                break
            }
            isIdle = true
            for waiter in idleWaiters { waiter.resume() }
            idleWaiters.removeAll()
            guard await doorbells.next() != nil else { break }
        }
    }

    /// The next message by priority, produced now; nil when there is nothing to send.
    private func nextMessage() throws -> SyncMessage? {
        if !control.isEmpty { return control.removeFirst() }
        guard peerID != nil else { return nil }
        if let batch = heldBatch {
            heldBatch = nil
            return .deltaBatch(batch)
        }
        if let batch = try nextBatch(live: true) { return credentials(ahead: batch) }
        if let batch = try nextBatch(live: false) { return credentials(ahead: batch) }
        if let chunk = try nextAttachmentChunk() { return .attachmentChunk(chunk) }
        return nil
    }

    // MARK: - Ending

    /// Ends the session: the channel is closed and the engine forgets it.
    nonisolated public func close(reason: String = "closed locally") {
        Task { await self.end(reason, level: .info, notify: false) }
    }

    func end(_ reason: String, level: SyncLogLevel, notify: Bool) {
        guard endReason == nil else { return }
        endReason = reason
        readiness.withLock { $0 = false }
        persistUnsaved()
        if notify {
            // Best effort: tell the peer why before closing.
            var encoder = self.encoder
            let frame = encoder.encode(.error(SyncError(code: SyncErrorCode.protocolViolation.rawValue, message: reason)))
            let channel = self.channel
            Task { try? await channel.send(frame); channel.close() }
        } else {
            channel.close()
        }
        if level != .info || peerID != nil {
            engine.options.log(level, "sync session with \(peerDescription) ended: \(reason)")
        }
        if let line = refusalLog.due(now: .now, force: true) {
            engine.options.log(.warning, "\(peerDescription) sent writes this store refused: \(line)")
        }
        engine.totals.withLock { $0.add(statistics) }
        engine.ended(self)
        ring()
        for waiter in catchUpWaiters { waiter.resume(returning: false) }
        catchUpWaiters.removeAll()
        for waiter in idleWaiters { waiter.resume() }
        idleWaiters.removeAll()
        for (_, waiter) in receiptWaiters { waiter.resume() }
        receiptWaiters.removeAll()
        queueDrained()
    }

    /// Suspends until the session has ended and has handled every frame that arrived before
    /// its channel closed.
    public func waitUntilEnded() async {
        guard !finished else { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    /// Suspends until every subscription this side announced has been answered in full by the
    /// peer (it sent everything it has of it, as of then). Returns false if the session ended first.
    public func waitUntilCaughtUp() async -> Bool {
        if endReason != nil { return false }
        if isCaughtUp { return true }
        return await withCheckedContinuation { catchUpWaiters.append($0) }
    }

    /// Suspends until this side has handed everything it had to send to the channel (acks
    /// due included), or the session ended. Before closing a one-off sync, so the last ack is not
    /// lost. An ack still held to be coalesced (`acknowledgementDelay`) goes later, if the
    /// session is still open then; a sync closed first leaves its position to the next summary.
    public func waitUntilIdle() async {
        if endReason != nil || (isIdle && control.isEmpty) { return }
        await withCheckedContinuation { idleWaiters.append($0) }
    }

    /// Waits until this side has handed everything it had to send to the channel, and the
    /// channel has put it on a link: true then, or when the session has ended; false at
    /// `deadline`. A clean stop waits so (bounded) before it closes the links.
    public func flush(until deadline: ContinuousClock.Instant) async -> Bool {
        while endReason == nil && !(isIdle && control.isEmpty) {
            guard ContinuousClock.now < deadline else { return false }
            // Polled, like PeerSession.flush: once, at a stop, for a bounded time.
            try? await Task.sleep(for: .milliseconds(5))
        }
        return endReason != nil ? true : await channel.flush(until: deadline)
    }

    /// Suspends until this side has taken `frames` frames from the channel in all, or the
    /// session ended. The serving side of a one-off sync waits so for the puller's last ack
    /// (`statistics.framesSent` on the other side) before the link is closed under it.
    public func waitUntilReceived(frames: Int) async {
        if endReason != nil || statistics.framesReceived >= frames { return }
        await withCheckedContinuation { receiptWaiters.append((frames, $0)) }
    }

    private func frameReceived() {
        let received = statistics.framesReceived
        receiptWaiters.removeAll { frames, waiter in
            guard received >= frames else { return false }
            waiter.resume()
            return true
        }
    }

    var isCaughtUp: Bool { peerID != nil && announced.values.allSatisfy { $0 } }

    func caughtUpChanged() {
        guard isCaughtUp else { return }
        for waiter in catchUpWaiters { waiter.resume(returning: true) }
        catchUpWaiters.removeAll()
    }

    var peerDescription: String {
        guard peerID != nil else { return "a peer (before its hello)" }
        return peerName.isEmpty ? peerKey : "\(peerName) (\(peerKey))"
    }
}

/// Error codes of the `error` message. For `unknownSubscription` and `needSummary` the message
/// is the subscription id; for `attachmentNotFound`, the hash in hex.
enum SyncErrorCode: UInt32 {
    /// The sender is ending the session; the message says why.
    case protocolViolation = 1
    /// A summary named a subscription the sender does not know: send `subscribe` first.
    case unknownSubscription = 2
    /// A summary gave only a digest that does not match what the sender remembers: send it whole.
    case needSummary = 3
    /// A subscription's query was refused (the message says why); the session goes on.
    case badSubscription = 4
    case attachmentNotFound = 5
    case incompatibleVersion = 6
    /// A subscription asks for a collection the peer may not read (`SyncPermissions`); the
    /// message is the subscription id, a space, and why. Sent again for each of its summaries;
    /// the session goes on, and the subscriber counts the subscription as answered.
    case notPermitted = 7
}

struct SyncProtocolError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

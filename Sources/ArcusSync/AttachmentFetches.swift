import ArcusCRDT
import ArcusCodec
import ArcusStore
import Foundation
import Synchronization

/// Attachments being fetched from peers: one fetch per blob, however many wait for it.
///
/// A fetch asks one session at a time, from the bytes that already arrived (they are kept in
/// the store, so a fetch resumes after a reconnect or a restart), and moves on when that peer
/// lacks the blob or its session ends. A peer that lacks a blob asked of it with hops left
/// fetches it in turn from its other peers and then serves it: that is how a blob crosses
/// hops. Complete blobs are verified against their hash before anyone can read them; bytes
/// that do not match are discarded and the peer that sent them is not asked again.
///
/// The blob's length is the token's, fixed when the fetch starts: a local fetch takes it from
/// the token it was given; a relayed one from this side's own documents, else from the request
/// (and a request that disagrees with this side's documents is refused). A chunk whose total
/// length disagrees, or whose bytes would run past it, ends the fetch from that peer: what
/// arrived is discarded and the peer is not asked again. So nothing past the token's length is
/// ever written, whatever the sender says.
///
/// What peers can make this side keep is bounded: relayed fetches under way reserve their
/// length, and with the blobs kept for no document (`Store.reclaimableAttachments`: pieces of
/// fetches no longer under way, complete blobs no document references) they stay within
/// `Options.relayedAttachmentBytes`; a relay that does not fit reclaims the oldest of those, or
/// is refused. Each peer may have `SyncSession.relayLimit` relays under way.
///
/// A fetch that something on this device waits for and that no connected peer could serve
/// asks again every few seconds (a relay that had no source may have one now), and whenever a
/// new session starts.
final class AttachmentFetches: Sendable {
    struct Fetch {
        let hash: [UInt8]
        /// The blob's length, from the token (see above); chunks that disagree are refused.
        let length: Int64
        /// Hops left for the requests this fetch sends.
        let hops: UInt8
        var source: ObjectIdentifier?
        /// Sessions that said they do not have it.
        var tried: Set<ObjectIdentifier> = []
        /// The session a relayed request came from: not asked back.
        var excluded: Set<ObjectIdentifier> = []
        var waiters: [UInt64: CheckedContinuation<Void, any Error>] = [:]
        var progress: [@Sendable (AttachmentProgress) -> Void] = []
        /// Peers waiting for this side to have it, to be served then.
        var relays: [(session: SyncSession, request: AttachmentRequest)] = []
        /// Whether something on this device waits (it then waits for new peers; a relay gives up).
        var local: Bool
        /// Whether a peer's request started it: it holds `length` of the relay allowance until it ends.
        var reserved = false
        /// Whether a retry of the sessions that could not serve it is scheduled.
        var retrying = false
        /// Seconds until the next retry (doubling up to `retryLimit`).
        var retryDelay = AttachmentFetches.firstRetry

        /// Whether `session` may be asked: not yet, and not a peer that sent this blob wrong.
        func mayAsk(_ session: SyncSession, refused: Set<[UInt8]>) -> Bool {
            let id = ObjectIdentifier(session)
            return !tried.contains(id) && !excluded.contains(id) && session.isReady && !refused.contains(session.peerIdentity ?? [])
        }
    }

    static let firstRetry = 0.25
    static let retryLimit = 5.0

    /// Relays a request may go through: the fetcher's neighbour and one more peer.
    static let hops: UInt8 = 2

    private let store: Store
    private let log: @Sendable (SyncLogLevel, String) -> Void
    /// Most bytes relayed fetches may reserve, with the blobs kept for no document.
    let relayAllowance: Int64
    private let fetches = Mutex<[[UInt8]: Fetch]>([:])
    /// Per blob, the peers (their hello's id) that sent what its token or hash refutes: not
    /// asked for it again while this engine runs, on any session. At most `refusalMemory` blobs.
    private let refusals = Mutex<[[UInt8]: Set<[UInt8]>]>([:])
    static let refusalMemory = 1024
    private let nextWaiter = Mutex<UInt64>(0)
    let sessions = Mutex<@Sendable () -> [SyncSession]>({ [] })

    /// A complete blob no document references is not reclaimed this soon after it was stored:
    /// one just uploaded is not in its document yet (as `Store.collectAttachmentGarbage`).
    static let reclaimGrace: TimeInterval = 60

    init(store: Store, relayAllowance: Int64, log: @escaping @Sendable (SyncLogLevel, String) -> Void) {
        self.store = store
        self.relayAllowance = relayAllowance
        self.log = log
    }

    /// Waits until the blob is in the store, fetching it from peers as needed; `length` is the
    /// token's, and no chunk that disagrees with it is taken. Cancelling the task stops waiting
    /// (the bytes that arrived stay, for the next attempt).
    func fetch(_ hash: [UInt8], length: Int64, progress: (@Sendable (AttachmentProgress) -> Void)?) async throws {
        guard length >= 0 else { throw StoreError.attachment("attachment \(hex(hash)) has a token with a negative length (\(length)); the document holding it is damaged") }
        if store.attachmentLength(hash: hash) != nil { return }
        let waiter = nextWaiter.withLock { next -> UInt64 in
            next += 1
            return next
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let refusal = fetches.withLock { fetches -> (any Error)? in
                    guard !Task.isCancelled else { return CancellationError() }
                    var fetch = fetches[hash] ?? Fetch(hash: hash, length: length, hops: Self.hops, local: true)
                    guard fetch.length == length else {
                        // One hash, one length: one of the two tokens is wrong, and this one
                        // cannot be fetched alongside the other.
                        return StoreError.attachment("attachment \(hex(hash)) is being fetched as \(fetch.length) bytes, but this token says \(length): "
                            + "one of the documents that hold it has a wrong token; ask again once that fetch is done")
                    }
                    fetch.local = true
                    fetch.waiters[waiter] = continuation
                    if let progress { fetch.progress.append(progress) }
                    fetches[hash] = fetch
                    return nil
                }
                if let refusal {
                    continuation.resume(throwing: refusal)
                    return
                }
                askNext(hash)
            }
        } onCancel: {
            let continuation = fetches.withLock { fetches -> CheckedContinuation<Void, any Error>? in
                guard var fetch = fetches[hash], let continuation = fetch.waiters.removeValue(forKey: waiter) else { return nil }
                if fetch.waiters.isEmpty && fetch.relays.isEmpty && fetch.source == nil {
                    fetches[hash] = nil
                } else {
                    if fetch.waiters.isEmpty { fetch.local = false }
                    fetches[hash] = fetch
                }
                return continuation
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    /// A peer asked for a blob this side lacks, with hops left: fetch it, then serve it. False
    /// (the caller answers "not found") when neither this side's documents nor the request say
    /// how long the blob is, when they disagree, or when it does not fit the relay allowance.
    func relay(_ request: AttachmentRequest, for session: SyncSession) -> Bool {
        let own: Int64?
        let reclaimable: [ReclaimableAttachment]
        do {
            own = try store.referencedAttachment(hash: request.hash)?.length
            reclaimable = try store.reclaimableAttachments()
        } catch {
            log(.warning, "could not look up attachment \(hex(request.hash)) to relay it: \(error)")
            return false
        }
        let asked = request.length.map { Int64(clamping: $0) }
        guard let length = own ?? asked else { return false }
        if let asked, asked != length {
            log(.warning, "\(session.peerDescriptionForLogs) asked for attachment \(hex(request.hash)) as \(asked) bytes, "
                + "but the documents here say \(length): not relayed")
            return false
        }
        let now = Date()
        let admission = fetches.withLock { fetches -> (admitted: Bool, reclaim: [ReclaimableAttachment]) in
            if var fetch = fetches[request.hash] {
                guard fetch.length == length else { return (false, []) }
                fetch.relays.append((session, request))
                fetches[request.hash] = fetch
                return (true, [])
            }
            // What relays hold: the fetches they started, and blobs kept for no document
            // (except those being fetched, which their fetch accounts for).
            var used = fetches.values.reduce(Int64(0)) { $0 + ($1.reserved ? $1.length : 0) }
            let leftovers = reclaimable.filter { fetches[$0.hash] == nil && $0.hash != request.hash }.sorted { $0.since < $1.since }
            used += leftovers.reduce(Int64(0)) { $0 + $1.bytes }
            var reclaim: [ReclaimableAttachment] = []
            for leftover in leftovers where used > relayAllowance - length {
                if leftover.kind == .unreferenced && now.timeIntervalSince(leftover.since) < Self.reclaimGrace { continue }
                reclaim.append(leftover)
                used -= leftover.bytes
            }
            guard length <= relayAllowance, used <= relayAllowance - length else { return (false, []) }
            var fetch = Fetch(hash: request.hash, length: length, hops: request.hops - 1, local: false)
            fetch.reserved = true
            fetch.excluded.insert(ObjectIdentifier(session))
            fetch.relays.append((session, request))
            fetches[request.hash] = fetch
            return (true, reclaim)
        }
        for leftover in admission.reclaim {
            do {
                try store.reclaim(leftover, grace: Self.reclaimGrace)
            } catch {
                log(.warning, "could not reclaim attachment \(hex(leftover.hash)) to make room for a relay: \(error)")
            }
        }
        guard admission.admitted else {
            log(.info, "not relaying attachment \(hex(request.hash)) (\(length) bytes) for \(session.peerDescriptionForLogs): "
                + "relays hold \(relayAllowance) bytes at most")
            return false
        }
        askNext(request.hash)
        return true
    }

    /// Requests of `session` this side is fetching from other peers to pass on.
    func relayCount(for session: SyncSession) -> Int {
        let id = ObjectIdentifier(session)
        return fetches.withLock { fetches in
            fetches.values.reduce(0) { $0 + $1.relays.filter { ObjectIdentifier($0.session) == id }.count }
        }
    }

    /// Whether a fetch of this blob is under way (a request without hops must not wait on one:
    /// that could close a loop of peers each waiting for the next).
    func isFetching(_ hash: [UInt8]) -> Bool { fetches.withLock { $0[hash] != nil } }

    /// Asks the next session that may have the blob; with none left, a relay gives up and a
    /// local fetch waits for the next session to connect.
    private func askNext(_ hash: [UInt8]) {
        let candidates = sessions.withLock { $0 }()
        let choice = fetches.withLock { fetches -> (SyncSession, AttachmentRequest)? in
            guard var fetch = fetches[hash], fetch.source == nil else { return nil }
            let refused = refusals.withLock { $0[hash] ?? [] }
            guard let session = candidates.first(where: { fetch.mayAsk($0, refused: refused) }) else { return nil }
            fetch.source = ObjectIdentifier(session)
            fetches[hash] = fetch
            let offset = store.receivedAttachmentBytes(hash: hash)
            let request = AttachmentRequest(hash: hash, offset: UInt64(offset),
                                            chunkSize: UInt32(session.chunkSize(offset: offset, length: fetch.length)), hops: fetch.hops,
                                            length: UInt64(fetch.length))
            return (session, request)
        }
        if let (session, request) = choice {
            session.request(request)
            return
        }
        giveUpIfRelay(hash)
        retryLater(hash)
    }

    /// A local fetch that no session could serve asks them all again after a while: a peer
    /// that lacked the blob may have fetched it meanwhile.
    private func retryLater(_ hash: [UInt8]) {
        let delay = fetches.withLock { fetches -> Double? in
            guard var fetch = fetches[hash], fetch.local, fetch.source == nil, !fetch.retrying else { return nil }
            fetch.retrying = true
            let delay = fetch.retryDelay
            fetch.retryDelay = min(fetch.retryDelay * 2, Self.retryLimit)
            fetches[hash] = fetch
            return delay
        }
        guard let delay else { return }
        Task { [weak self] in
            try? await Task.sleep(for: .milliseconds(Int(delay * 1000)))
            guard let self else { return }
            let again = self.fetches.withLock { fetches -> Bool in
                guard var fetch = fetches[hash] else { return false }
                fetch.retrying = false
                fetch.tried.removeAll()
                fetches[hash] = fetch
                return fetch.source == nil
            }
            if again { self.askNext(hash) }
        }
    }

    private func giveUpIfRelay(_ hash: [UInt8]) {
        let abandoned = fetches.withLock { fetches -> [(session: SyncSession, request: AttachmentRequest)] in
            guard let fetch = fetches[hash], fetch.source == nil, !fetch.local else { return [] }
            fetches[hash] = nil
            return fetch.relays
        }
        for relay in abandoned { relay.session.answerNotFound(hash) }
    }

    /// A session can take requests: fetches with no source try it (and a fetch that tried
    /// everyone tries again, since this peer may have come with new data).
    func sessionReady(_ session: SyncSession) {
        let waiting = fetches.withLock { fetches -> [[UInt8]] in
            for hash in fetches.keys where fetches[hash]!.source == nil { fetches[hash]!.tried.remove(ObjectIdentifier(session)) }
            return fetches.values.filter { $0.source == nil && $0.local }.map(\.hash)
        }
        for hash in waiting { askNext(hash) }
    }

    func sessionEnded(_ session: SyncSession) {
        let id = ObjectIdentifier(session)
        let orphaned = fetches.withLock { fetches -> [[UInt8]] in
            var orphaned: [[UInt8]] = []
            for hash in fetches.keys {
                fetches[hash]!.relays.removeAll { ObjectIdentifier($0.session) == id }
                if fetches[hash]!.source == id {
                    fetches[hash]!.source = nil
                    orphaned.append(hash)
                }
            }
            return orphaned
        }
        for hash in orphaned { askNext(hash) }
    }

    func notFound(_ hash: [UInt8], on session: SyncSession) {
        let id = ObjectIdentifier(session)
        let retry = fetches.withLock { fetches -> Bool in
            guard var fetch = fetches[hash], fetch.source == id else { return false }
            fetch.source = nil
            fetch.tried.insert(id)
            fetches[hash] = fetch
            return true
        }
        if retry { askNext(hash) }
    }

    /// A piece arrived from `session`. Pieces from a session that is not the current source,
    /// or that do not continue what arrived, are stale and dropped. A piece the token refutes
    /// (another total length, bytes past the end) ends the fetch from that peer.
    func received(_ chunk: AttachmentChunk, from session: SyncSession) {
        let id = ObjectIdentifier(session)
        guard let fetch = fetches.withLock({ $0[chunk.hash] }), fetch.source == id else { return }
        let have = store.receivedAttachmentBytes(hash: chunk.hash)
        guard chunk.offset == UInt64(have) else { return }
        let length = fetch.length
        guard chunk.totalLength == UInt64(length) else {
            refused(chunk.hash, from: session, because: "the peer says it is \(chunk.totalLength) bytes long, but its token says \(length)")
            return
        }
        guard Int64(chunk.bytes.count) <= length - have, !chunk.bytes.isEmpty || have == length else {
            refused(chunk.hash, from: session, because: chunk.bytes.isEmpty
                ? "the peer sent an empty piece at byte \(have) of \(length)"
                : "the peer sent bytes past its token's length of \(length) (\(have) had arrived, the piece has \(chunk.bytes.count))")
            return
        }
        do {
            try store.receiveAttachmentPiece(hash: chunk.hash, offset: have, bytes: chunk.bytes)
        } catch {
            // This side's disk, not the peer: no one else can do better until it is fixed.
            log(.error, "could not keep a piece of attachment \(hex(chunk.hash)): \(error)")
            store.discardReceivedAttachment(hash: chunk.hash)
            end(chunk.hash, failing: error)
            return
        }
        let arrived = have + Int64(chunk.bytes.count)
        let progress = fetches.withLock { $0[chunk.hash]?.progress ?? [] }
        for report in progress { report(AttachmentProgress(bytesFetched: arrived, totalBytes: length)) }
        guard arrived == length else { return }
        do {
            try store.completeAttachment(AttachmentToken(hash: chunk.hash, length: length))
        } catch {
            // The store discarded what arrived. Another peer may have the right bytes; with none
            // left to ask, whoever waits hears why.
            refused(chunk.hash, from: session, because: "\(error)")
            return
        }
        let done = fetches.withLock { $0.removeValue(forKey: chunk.hash) }
        guard let done else { return }
        for waiter in done.waiters.values { waiter.resume() }
        for relay in done.relays { relay.session.serve(relay.request) }
    }

    /// `session` sent what the token refutes (or bytes that do not match the hash): what
    /// arrived is discarded, and its peer is not asked for the blob again. Another peer is
    /// asked; with none left, whoever waits hears why.
    private func refused(_ hash: [UInt8], from session: SyncSession, because reason: String) {
        let error = StoreError.attachment("attachment \(hex(hash)) from \(session.peerDescriptionForLogs): \(reason); "
            + "what arrived was discarded, and that peer is not asked for it again")
        log(.warning, "\(error)")
        store.discardReceivedAttachment(hash: hash)
        let refused = refusals.withLock { refusals -> Set<[UInt8]> in
            if refusals[hash] == nil && refusals.count >= Self.refusalMemory { refusals.remove(at: refusals.startIndex) }
            if let peer = session.peerIdentity { refusals[hash, default: []].insert(peer) }
            return refusals[hash] ?? []
        }
        let candidates = sessions.withLock { $0 }()
        let failed = fetches.withLock { fetches -> Bool in
            guard var fetch = fetches[hash] else { return false }
            fetch.source = nil
            fetch.tried.insert(ObjectIdentifier(session))
            fetch.excluded.insert(ObjectIdentifier(session))
            fetches[hash] = fetch
            return !candidates.contains { fetch.mayAsk($0, refused: refused) }
        }
        if failed {
            end(hash, failing: error)
        } else {
            askNext(hash)
        }
    }

    /// Ends the fetch: whoever waits hears `error`, relays are told "not found".
    private func end(_ hash: [UInt8], failing error: any Error) {
        guard let failed = fetches.withLock({ $0.removeValue(forKey: hash) }) else { return }
        for waiter in failed.waiters.values { waiter.resume(throwing: error) }
        for relay in failed.relays { relay.session.answerNotFound(hash) }
    }

    private func hex(_ hash: [UInt8]) -> String { AttachmentToken(hash: hash, length: 0).hashHex }

    /// The fetches under way, sorted by hash (see `SyncEngine.attachmentFetches`).
    func snapshot() -> [AttachmentFetchStatus] {
        let sessions = self.sessions.withLock { $0 }()
        let fetches = self.fetches.withLock { Array($0.values) }
        return fetches.map { fetch in
            let source = fetch.source.flatMap { id in sessions.first { ObjectIdentifier($0) == id } }
            let state: AttachmentFetchStatus.State = fetch.source == nil ? .waiting : (fetch.local ? .fetching : .relaying)
            return AttachmentFetchStatus(
                hashHex: hex(fetch.hash), bytesFetched: store.receivedAttachmentBytes(hash: fetch.hash),
                totalBytes: fetch.length, source: source?.peerDescriptionForLogs, state: state)
        }.sorted { $0.hashHex < $1.hashHex }
    }
}

extension SyncEngine {
    /// How many peers a fetch may be relayed through: a blob is fetched from at most this many
    /// links plus one away.
    public static var attachmentRelays: Int { Int(AttachmentFetches.hops) }

    /// The attachment's bytes: from this store if it has them, else fetched from peers in
    /// chunks (resuming where an earlier attempt stopped), verified against the token's hash.
    /// Waits while no connected peer has it; cancel the task to give up.
    public func fetchAttachment(_ token: AttachmentToken, progress: (@Sendable (AttachmentProgress) -> Void)? = nil) async throws -> Data {
        try await attachments.fetch(token.hash, length: token.length, progress: progress)
        switch try store.fetchAttachment(token, progress: progress) {
        case .available(let data): return data
        case .missing: throw StoreError.attachment("attachment \(token.hashHex) vanished from the store right after it arrived")
        }
    }
}

extension SyncSession {
    /// Whether the handshake is done (requests may go to it).
    nonisolated var isReady: Bool { readiness.withLock { $0 } }

    /// The peer's id from its hello; nil before it.
    nonisolated var peerIdentity: [UInt8]? { helloPeerID.withLock { $0 } }

    /// Fewest blob bytes in a chunk, however small the link's frames: a frame that cannot hold
    /// this much is sent anyway (the link below splits it).
    static let minimumChunkSize = 16

    /// Bytes of blob per chunk at `offset` of a blob of `length` (nil: unknown), so that the
    /// chunk's frame fits the channel's preferred frame size.
    nonisolated func chunkSize(offset: Int64, length: Int64) -> Int {
        let total = UInt64(max(0, length))
        let capacity = AttachmentChunk.capacity(frameSize: channel.preferredFrameSize, offset: UInt64(max(0, offset)), totalLength: total)
        return max(Self.minimumChunkSize, capacity)
    }

    /// Who the peer is, for logs written outside the actor.
    nonisolated var peerDescriptionForLogs: String { peerLabel.withLock { $0 } }

    nonisolated func request(_ request: AttachmentRequest) {
        Task { await self.send(.attachmentRequest(request)) }
    }

    nonisolated func serve(_ request: AttachmentRequest) {
        Task { await self.queue(request) }
    }

    nonisolated func answerNotFound(_ hash: [UInt8]) {
        let hex = AttachmentToken(hash: hash, length: 0).hashHex
        Task { await self.send(.error(SyncError(code: SyncErrorCode.attachmentNotFound.rawValue, message: hex))) }
    }

    private func queue(_ request: AttachmentRequest) {
        chunkRequests.append(request)
        ring()
    }

    /// Relayed fetches one peer may have under way at once; further requests for blobs this
    /// side lacks are refused (the peer asks elsewhere, or again later).
    static let relayLimit = 16

    func receivedAttachmentRequest(_ request: AttachmentRequest) {
        guard request.hash.count == 32 else {
            refuse(request.hash)
            return
        }
        guard mayRead(attachment: request.hash) else {
            engine.options.log(.warning, "\(peerDescription) asked for attachment \(AttachmentToken(hash: request.hash, length: 0).hashHex), which no document it may read references: refused")
            refuse(request.hash)
            return
        }
        if let length = store.attachmentLength(hash: request.hash) {
            // A requester whose token says another length would refuse every chunk.
            if let wanted = request.length, wanted != UInt64(length) {
                refuse(request.hash)
            } else {
                queue(request)
            }
        } else if request.hops > 0, engine.attachments.relayCount(for: self) < Self.relayLimit, engine.attachments.relay(request, for: self) {
            // Served once it is here.
        } else {
            refuse(request.hash)
        }
    }

    /// Whether a document of a collection the peer may read references the blob here: a peer
    /// that may not read everything is served (and relayed) only those. Answered "not found"
    /// otherwise, like a blob this side lacks, so the refusal tells nothing.
    private func mayRead(attachment hash: [UInt8]) -> Bool {
        guard case .named(let readable) = permissions.read else { return true }
        do {
            return !(try store.collectionsReferencing(attachmentHash: hash)).isDisjoint(with: readable)
        } catch {
            engine.options.log(.warning, "could not check which documents reference attachment \(AttachmentToken(hash: hash, length: 0).hashHex): \(error)")
            return false
        }
    }

    /// Tells the peer this side does not have the blob (queued now, so the queue bound holds).
    private func refuse(_ hash: [UInt8]) {
        send(.error(SyncError(code: SyncErrorCode.attachmentNotFound.rawValue, message: AttachmentToken(hash: hash, length: 0).hashHex)))
    }

    func receivedAttachmentChunk(_ chunk: AttachmentChunk) {
        engine.attachments.received(chunk, from: self)
    }

    func notFound(hashHex: String) {
        guard let hash = AttachmentToken.hash(hex: hashHex) else { return }
        engine.attachments.notFound(hash, on: self)
    }

    /// The next chunk of the first blob asked for; attachment data goes after everything else.
    func nextAttachmentChunk() throws -> AttachmentChunk? {
        while let request = chunkRequests.first {
            let offset = Int64(clamping: request.offset)
            guard let total = store.attachmentLength(hash: request.hash),
                let bytes = try store.readAttachment(hash: request.hash, offset: offset,
                                                     count: max(1, min(Int(request.chunkSize), chunkSize(offset: offset, length: total))))
            else {
                chunkRequests.removeFirst()
                refuse(request.hash)
                continue
            }
            let next = request.offset + UInt64(bytes.count)
            if bytes.isEmpty || next >= UInt64(total) {
                chunkRequests.removeFirst()
            } else {
                chunkRequests[0].offset = next
            }
            return AttachmentChunk(hash: request.hash, offset: request.offset, totalLength: UInt64(total), bytes: bytes)
        }
        return nil
    }

}

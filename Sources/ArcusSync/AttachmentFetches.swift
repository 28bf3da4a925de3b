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
/// A fetch that something on this device waits for and that no connected peer could serve
/// asks again every few seconds (a relay that had no source may have one now), and whenever a
/// new session starts.
final class AttachmentFetches: Sendable {
    struct Fetch {
        let hash: [UInt8]
        var length: Int64?
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
        /// Whether a retry of the sessions that could not serve it is scheduled.
        var retrying = false
        /// Seconds until the next retry (doubling up to `retryLimit`).
        var retryDelay = AttachmentFetches.firstRetry
    }

    static let firstRetry = 0.25
    static let retryLimit = 5.0

    /// Relays a request may go through: the fetcher's neighbour and one more peer.
    static let hops: UInt8 = 2

    private let store: Store
    private let log: @Sendable (SyncLogLevel, String) -> Void
    private let fetches = Mutex<[[UInt8]: Fetch]>([:])
    private let nextWaiter = Mutex<UInt64>(0)
    let sessions = Mutex<@Sendable () -> [SyncSession]>({ [] })

    init(store: Store, log: @escaping @Sendable (SyncLogLevel, String) -> Void) {
        self.store = store
        self.log = log
    }

    /// Waits until the blob is in the store, fetching it from peers as needed. Cancelling the
    /// task stops waiting (the bytes that arrived stay, for the next attempt).
    func fetch(_ hash: [UInt8], length: Int64?, progress: (@Sendable (AttachmentProgress) -> Void)?) async throws {
        if store.attachmentLength(hash: hash) != nil { return }
        let waiter = nextWaiter.withLock { next -> UInt64 in
            next += 1
            return next
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let cancelled = fetches.withLock { fetches -> Bool in
                    guard !Task.isCancelled else { return true }
                    var fetch = fetches[hash] ?? Fetch(hash: hash, length: length, hops: Self.hops, local: true)
                    fetch.local = true
                    if fetch.length == nil { fetch.length = length }
                    fetch.waiters[waiter] = continuation
                    if let progress { fetch.progress.append(progress) }
                    fetches[hash] = fetch
                    return false
                }
                if cancelled {
                    continuation.resume(throwing: CancellationError())
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

    /// A peer asked for a blob this side lacks, with hops left: fetch it, then serve it.
    func relay(_ request: AttachmentRequest, for session: SyncSession) {
        let joined = fetches.withLock { fetches -> Bool in
            if var fetch = fetches[request.hash] {
                fetch.relays.append((session, request))
                fetches[request.hash] = fetch
                return true
            }
            var fetch = Fetch(hash: request.hash, length: nil, hops: request.hops - 1, local: false)
            fetch.excluded.insert(ObjectIdentifier(session))
            fetch.relays.append((session, request))
            fetches[request.hash] = fetch
            return false
        }
        if !joined { askNext(request.hash) }
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
            guard let session = candidates.first(where: {
                !fetch.tried.contains(ObjectIdentifier($0)) && !fetch.excluded.contains(ObjectIdentifier($0)) && $0.isReady
            }) else { return nil }
            fetch.source = ObjectIdentifier(session)
            fetches[hash] = fetch
            let offset = store.receivedAttachmentBytes(hash: hash)
            let request = AttachmentRequest(hash: hash, offset: UInt64(offset),
                                            chunkSize: UInt32(session.chunkSize(offset: offset, length: fetch.length)), hops: fetch.hops)
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
    /// or that do not continue what arrived, are stale and dropped.
    func received(_ chunk: AttachmentChunk, from session: SyncSession) throws {
        let id = ObjectIdentifier(session)
        guard let fetch = fetches.withLock({ $0[chunk.hash] }), fetch.source == id else { return }
        let have = store.receivedAttachmentBytes(hash: chunk.hash)
        guard chunk.offset == UInt64(have) else { return }
        let total = Int64(clamping: chunk.totalLength)
        if let length = fetch.length, length != total {
            throw SyncProtocolError("attachment \(hex(chunk.hash)) is \(length) bytes long, but the peer says \(total)")
        }
        guard have + Int64(chunk.bytes.count) <= total, !chunk.bytes.isEmpty || total == have else {
            throw SyncProtocolError("a piece of attachment \(hex(chunk.hash)) runs past its length")
        }
        try store.receiveAttachmentPiece(hash: chunk.hash, offset: have, bytes: chunk.bytes)
        let arrived = have + Int64(chunk.bytes.count)
        let progress = fetches.withLock { fetches -> [@Sendable (AttachmentProgress) -> Void] in
            fetches[chunk.hash]?.length = total
            return fetches[chunk.hash]?.progress ?? []
        }
        for report in progress { report(AttachmentProgress(bytesFetched: arrived, totalBytes: total)) }
        guard arrived == total else { return }
        do {
            try store.completeAttachment(AttachmentToken(hash: chunk.hash, length: total))
        } catch {
            // The store discarded what arrived. Another peer may have the right bytes; with none
            // left to ask, whoever waits hears why.
            log(.warning, "attachment \(hex(chunk.hash)) from \(session.peerDescriptionForLogs): \(error)")
            failedVerification(chunk.hash, on: session, error)
            return
        }
        let done = fetches.withLock { $0.removeValue(forKey: chunk.hash) }
        guard let done else { return }
        for waiter in done.waiters.values { waiter.resume() }
        for relay in done.relays { relay.session.serve(relay.request) }
    }

    private func failedVerification(_ hash: [UInt8], on session: SyncSession, _ error: any Error) {
        let candidates = sessions.withLock { $0 }()
        let failed = fetches.withLock { fetches -> Fetch? in
            guard var fetch = fetches[hash] else { return nil }
            fetch.source = nil
            fetch.tried.insert(ObjectIdentifier(session))
            fetch.excluded.insert(ObjectIdentifier(session))
            let others = candidates.contains {
                !fetch.tried.contains(ObjectIdentifier($0)) && !fetch.excluded.contains(ObjectIdentifier($0)) && $0.isReady
            }
            if others {
                fetches[hash] = fetch
                return nil
            }
            fetches[hash] = nil
            return fetch
        }
        guard let failed else {
            askNext(hash)
            return
        }
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

    /// Fewest blob bytes in a chunk, however small the link's frames: a frame that cannot hold
    /// this much is sent anyway (the link below splits it).
    static let minimumChunkSize = 16

    /// Bytes of blob per chunk at `offset` of a blob of `length` (nil: unknown), so that the
    /// chunk's frame fits the channel's preferred frame size.
    nonisolated func chunkSize(offset: Int64, length: Int64?) -> Int {
        let total = UInt64(max(0, length ?? Int64.max))
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
        if store.attachmentLength(hash: request.hash) != nil {
            queue(request)
        } else if request.hops > 0, engine.attachments.relayCount(for: self) < Self.relayLimit {
            engine.attachments.relay(request, for: self)
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

    func receivedAttachmentChunk(_ chunk: AttachmentChunk) throws {
        try engine.attachments.received(chunk, from: self)
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

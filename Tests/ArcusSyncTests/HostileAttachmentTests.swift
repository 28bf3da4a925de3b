import ArcusCRDT
import ArcusCodec
import ArcusStore
import ArcusSync
import ArcusTestSupport
import Foundation
import Synchronization
import Testing

/// Peers that lie about attachments, through the real protocol: two (or three) engines over
/// channels, the serving side an honest store whose chunks are rewritten on their way out. A
/// blob's length is the token's, never the sender's: nothing past it reaches the disk, the fetch
/// from that peer fails with a clear error, what arrived is discarded, and the peer is not asked
/// again. What peers can make a relay keep is bounded by `relayedAttachmentBytes`.
@Suite("Hostile attachment peers")
struct HostileAttachmentTests {
    static let terabyte: UInt64 = 1 << 40

    /// A 20,000-byte blob in a document on `peer`.
    static func photo(on peer: Peer, seed: UInt8 = 7, id: String = "photo") throws -> (bytes: Data, token: AttachmentToken) {
        let bytes = AttachmentFetchTests.blob(20_000, seed: seed)
        return (bytes, try AttachmentFetchTests.attach(bytes, on: peer, id: id))
    }

    /// `liar` and `other` over a channel pair whose chunks from `liar` go through `rewrite`.
    static func connectLying(_ liar: Peer, _ other: Peer, rewrite: @escaping @Sendable (AttachmentChunk) -> [AttachmentChunk]) -> Connection {
        let (ca, cb) = TestChannel.pair(preferredFrameSize: 1024)
        let lying = LyingChunks(ca, rewrite: rewrite)
        let sa = liar.engine.connect(lying)
        let sb = other.engine.connect(cb)
        return Connection(left: sa, right: sb, leftChannel: ca, rightChannel: cb)
    }

    @Test("a peer that says a blob is 2^40 bytes long is refused at its first chunk: nothing is kept, the fetch fails saying why, sync goes on")
    func claimsATerabyte() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let a = try Peer("a"), b = try Peer("b", store: Store(directory: directory.url))
        let (_, token) = try Self.photo(on: a)
        _ = try b.subscribe("SELECT * FROM photos")
        let link = Self.connectLying(a, b) { chunk in
            var lie = chunk
            lie.totalLength = Self.terabyte
            return [lie]
        }
        #expect(await link.caughtUp())
        let watch = DiskWatch(directory.url)
        let outcome = await finished(Task { try await b.engine.fetchAttachment(token) }, within: 60)
        watch.stop()
        guard case .failure(let error)? = outcome else {
            Issue.record("the fetch did not fail: \(String(describing: outcome))")
            return
        }
        let message = "\(error)"
        #expect(message.contains("\(Self.terabyte) bytes long") && message.contains("token says 20000") && message.contains("from a ("), "\(message)")
        #expect(watch.most <= 20_000, "\(watch.most) bytes staged")
        #expect(DiskWatch.bytes(under: directory.url.appendingPathComponent("attachments")) == 0)
        #expect(b.store.receivedAttachmentBytes(hash: token.hash) == 0)
        #expect(!b.store.hasAttachment(token))
        #expect(b.log.contains(.warning, "token says 20000"))
        // The session goes on: documents still sync.
        #expect(await link.right.endReason == nil)
        try a.store.collection("photos").upsert(["_id": "later"])
        #expect(try await eventually { try ids(b.store, "photos") == ["later", "photo"] })
        a.engine.stop(); b.engine.stop()
    }

    @Test("a peer that keeps sending bytes past the token's length leaves none of them on disk, and the fetch fails saying why")
    func bytesPastTheEnd() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let a = try Peer("a"), b = try Peer("b", store: Store(directory: directory.url))
        let (_, token) = try Self.photo(on: a)
        // The right total length, but the last piece runs on, and more pieces follow it.
        let link = Self.connectLying(a, b) { chunk in
            guard chunk.offset + UInt64(chunk.bytes.count) == chunk.totalLength else { return [chunk] }
            var longer = chunk
            longer.bytes += [UInt8](repeating: 0x5A, count: 700)
            let after = (0..<10).map { i in
                AttachmentChunk(hash: chunk.hash, offset: chunk.totalLength + 700 + UInt64(i * 900), totalLength: chunk.totalLength,
                                bytes: [UInt8](repeating: 0x5B, count: 900))
            }
            return [longer] + after
        }
        #expect(await link.caughtUp())
        let watch = DiskWatch(directory.url)
        let outcome = await finished(Task { try await b.engine.fetchAttachment(token) }, within: 60)
        watch.stop()
        guard case .failure(let error)? = outcome else {
            Issue.record("the fetch did not fail: \(String(describing: outcome))")
            return
        }
        #expect("\(error)".contains("past its token's length of 20000"), "\(error)")
        #expect(watch.most <= 20_000, "\(watch.most) bytes staged")
        #expect(DiskWatch.bytes(under: directory.url.appendingPathComponent("attachments")) == 0)
        #expect(!b.store.hasAttachment(token))
        a.engine.stop(); b.engine.stop()
    }

    @Test("a relay asked for a blob by a fetcher stages no more than the fetcher's token says, whatever its source claims")
    func relayTakesTheRequestersLength() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        // b relays from a liar that claims 2^40 bytes and sends on past the real end; b has no
        // document that references the blob, so only c's request says how long it is.
        let a = try Peer("a"), b = try Peer("b", store: Store(directory: directory.url)), c = try Peer("c")
        let (_, token) = try Self.photo(on: a)
        let ab = Self.connectLying(a, b) { chunk in
            var lie = chunk
            lie.totalLength = Self.terabyte
            guard chunk.offset + UInt64(chunk.bytes.count) == 20_000 else { return [lie] }
            return [lie] + (0..<20).map { i in
                AttachmentChunk(hash: chunk.hash, offset: 20_000 + UInt64(i * 900), totalLength: Self.terabyte, bytes: [UInt8](repeating: 0x5B, count: 900))
            }
        }
        let bc = connect(b, c, preferredFrameSize: 1024)
        #expect(await ab.caughtUp())
        #expect(await bc.caughtUp())
        let watch = DiskWatch(directory.url)
        let fetch = Task { try await c.engine.fetchAttachment(token) }
        #expect(await eventually { b.log.contains(.warning, "the peer says it is \(Self.terabyte) bytes long, but its token says 20000") },
                "\(b.log.all)")
        try await Task.sleep(for: .milliseconds(200))
        watch.stop()
        #expect(watch.most <= 20_000, "\(watch.most) bytes staged at the relay")
        #expect(DiskWatch.bytes(under: directory.url.appendingPathComponent("attachments")) == 0)
        #expect(!c.store.hasAttachment(token))
        // c has no other way to the blob: it waits, and b does not ask the liar again.
        let requests = ab.rightChannel.sentTypes.filter { $0 == .attachmentRequest }.count
        try await Task.sleep(for: .milliseconds(600))
        #expect(ab.rightChannel.sentTypes.filter { $0 == .attachmentRequest }.count == requests)
        fetch.cancel()
        _ = try? await fetch.value
        for peer in [a, b, c] { peer.engine.stop() }
    }

    @Test("a peer that asks a relay for many blobs at once makes it keep no more than its relay allowance")
    func relayAllowance() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let a = try Peer("a")
        let b = try Peer("b", store: Store(directory: directory.url), relayedAttachmentBytes: 50_000)
        // Four 20,000-byte blobs on a; a scripted peer asks b for all four at once, and for a
        // fifth that it says is 2^40 bytes long.
        // (Odd seeds: `blob` makes the same bytes of seeds 2k and 2k+1.)
        let tokens = try (0..<4).map { i in try Self.photo(on: a, seed: UInt8(11 + 2 * i), id: "p\(i)").token }
        #expect(Set(tokens.map(\.hash)).count == 4)
        let ab = connect(a, b, preferredFrameSize: 1024)
        let (cb, scripted) = TestChannel.pair(preferredFrameSize: 1024)
        b.engine.connect(cb)
        #expect(await ab.caughtUp())
        var encoder = FrameEncoder()
        try scripted.sendRaw(encoder.encode(.hello(Hello(peerID: [3, 3, 3, 3, 3, 3, 3, 3], protocolVersion: SyncSession.protocolVersion))))
        encoder.context.intern(b.store.site)
        let huge = AttachmentRequest(hash: [UInt8](repeating: 0xEE, count: 32), chunkSize: 900, hops: 1, length: Self.terabyte)
        try scripted.sendRaw(encoder.encode(.attachmentRequest(huge)))
        for token in tokens {
            try scripted.sendRaw(encoder.encode(.attachmentRequest(AttachmentRequest(hash: token.hash, chunkSize: 900, hops: 1, length: 20_000))))
        }
        let watch = DiskWatch(directory.url)
        // Two fit; the others are refused ("not found"), and the huge one at once. (Patient: in
        // CI's loaded sync phase the second blob took longer than 20 s to go through the relay.)
        #expect(await eventually { Self.answers(to: cb) == (notFound: 3, blobs: 2) }, "\(Self.answers(to: cb))")
        try await Task.sleep(for: .milliseconds(200))
        watch.stop()
        #expect(watch.most <= 50_000, "\(watch.most) bytes kept for relays")
        #expect(DiskWatch.bytes(under: directory.url.appendingPathComponent("attachments")) <= 50_000)
        #expect(b.log.contains(.info, "relays hold 50000 bytes at most"))
        a.engine.stop(); b.engine.stop()
    }

    /// What b sent the scripted peer: "not found" answers, and blobs whose last chunk went.
    static func answers(to channel: TestChannel) -> (notFound: Int, blobs: Int) {
        var decoder = FrameDecoder()
        var notFound = 0, blobs = 0
        for frame in channel.sent.withLock({ $0 }) {
            switch TestChannel.type(of: frame) {
            case .error?:
                notFound += 1
            case .attachmentChunk?:
                if case .attachmentChunk(let chunk)? = try? decoder.decode(frame), chunk.offset + UInt64(chunk.bytes.count) == chunk.totalLength { blobs += 1 }
            default:
                break
            }
        }
        return (notFound, blobs)
    }

    @Test("a peer whose bytes do not match the hash is not asked for that blob again, even on a new session; an honest peer then serves it")
    func wrongBytesNotAskedAgain() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let liar = try Peer("liar"), honest = try Peer("honest"), b = try Peer("b", store: Store(directory: directory.url))
        let (bytes, token) = try Self.photo(on: liar)
        _ = try Self.photo(on: honest)
        let junk: @Sendable (AttachmentChunk) -> [AttachmentChunk] = { chunk in
            var lie = chunk
            lie.bytes = [UInt8](repeating: 0xAB, count: chunk.bytes.count)
            return [lie]
        }
        var link = Self.connectLying(liar, b, rewrite: junk)
        #expect(await link.caughtUp())
        let first = await finished(Task { try await b.engine.fetchAttachment(token) }, within: 60)
        guard case .failure(let error)? = first else {
            Issue.record("the first fetch did not fail: \(String(describing: first))")
            return
        }
        #expect("\(error)".contains("does not match its hash") && "\(error)".contains("from liar ("), "\(error)")
        #expect(b.store.receivedAttachmentBytes(hash: token.hash) == 0)
        #expect(DiskWatch.bytes(under: directory.url.appendingPathComponent("attachments")) == 0)

        // The liar comes back on a new session; a second fetch does not ask it.
        link.close()
        await link.ended()
        link = Self.connectLying(liar, b, rewrite: junk)
        #expect(await link.caughtUp())
        let second = Task { try await b.engine.fetchAttachment(token) }
        try await Task.sleep(for: .milliseconds(500))
        #expect(!link.rightChannel.sentTypes.contains(.attachmentRequest), "the liar was asked again")
        let fair = connect(honest, b, preferredFrameSize: 1024)
        let outcome = await finished(second, within: 60)
        guard case .success(let data)? = outcome else {
            Issue.record("the second fetch did not succeed: \(String(describing: outcome))")
            return
        }
        #expect(data == bytes)
        _ = fair
        for peer in [liar, honest, b] { peer.engine.stop() }
    }
}

/// One side of a `TestChannel` pair whose attachment chunks are rewritten on their way out by
/// `rewrite` (a chunk may become several, or none): the peer's store and its serving are honest,
/// its chunks are not. Every other frame passes as it is; a chunk uses nothing of the session's
/// codec context, so each is decoded and encoded on its own.
final class LyingChunks: SyncChannel {
    let inner: TestChannel
    private let rewrite: @Sendable (AttachmentChunk) -> [AttachmentChunk]

    init(_ inner: TestChannel, rewrite: @escaping @Sendable (AttachmentChunk) -> [AttachmentChunk]) {
        self.inner = inner
        self.rewrite = rewrite
    }

    var incoming: AsyncStream<[UInt8]> { inner.incoming }
    var preferredFrameSize: Int { inner.preferredFrameSize }

    func send(_ frame: [UInt8]) async throws {
        var decoder = FrameDecoder()
        guard TestChannel.type(of: frame) == .attachmentChunk, case .attachmentChunk(let chunk)? = try decoder.decode(frame) else {
            try await inner.send(frame)
            return
        }
        for lie in rewrite(chunk) {
            var encoder = FrameEncoder()
            try await inner.send(encoder.encode(.attachmentChunk(lie)))
        }
    }

    func close() { inner.close() }
}

/// The most bytes seen under a data directory's `attachments/` while it runs, polled every
/// millisecond (with the final state checked as well, a peak it misses would still show).
final class DiskWatch: Sendable {
    private let peak = Mutex<Int64>(0)
    private let running = Mutex(true)

    init(_ directory: URL) {
        let attachments = directory.appendingPathComponent("attachments")
        Task.detached { [self] in
            while running.withLock({ $0 }) {
                let bytes = DiskWatch.bytes(under: attachments)
                peak.withLock { $0 = max($0, bytes) }
                try? await Task.sleep(for: .milliseconds(1))
            }
        }
    }

    func stop() { running.withLock { $0 = false } }

    var most: Int64 { peak.withLock { $0 } }

    /// Bytes of every regular file under `root`.
    static func bytes(under root: URL) -> Int64 {
        guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.fileSizeKey, .isRegularFileKey]) else { return 0 }
        var total: Int64 = 0
        for case let url as URL in walker {
            guard let values = try? url.resourceValues(forKeys: [.fileSizeKey, .isRegularFileKey]), values.isRegularFile == true else { continue }
            total += Int64(values.fileSize ?? 0)
        }
        return total
    }
}

/// The task's outcome if it finishes within `seconds`; nil otherwise (it is then cancelled).
func finished<T: Sendable>(_ task: Task<T, any Error>, within seconds: Double) async -> Result<T, any Error>? {
    await withTaskGroup(of: Result<T, any Error>?.self) { group in
        group.addTask {
            do { return .success(try await task.value) } catch { return .failure(error) }
        }
        group.addTask {
            try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
            return nil
        }
        let first = await group.next() ?? nil
        if first == nil { task.cancel() }
        group.cancelAll()
        return first
    }
}

import ArcusCRDT
import ArcusCodec
import ArcusStore
import ArcusSync
import ArcusTestSupport
import Foundation
import Synchronization
import Testing

/// Attachments move only when fetched: by token, in chunks sized to the link, resumable, verified
/// by hash, with progress reported to the fetcher.
@Suite("Attachment fetches")
struct AttachmentFetchTests {
    static func blob(_ count: Int, seed: UInt8 = 7) -> Data {
        var state = UInt32(seed) | 1
        return Data((0..<count).map { _ in
            state = state &* 1_664_525 &+ 1_013_904_223
            return UInt8(truncatingIfNeeded: state >> 24)
        })
    }

    /// A document on `peer` holding a new attachment of `bytes`.
    static func attach(_ bytes: Data, on peer: Peer, id: String = "photo") throws -> AttachmentToken {
        let token = try peer.store.newAttachment(bytes, metadata: ["name": "\(id).bin"])
        try peer.store.collection("photos").findByID(.string(id)).update { $0["image"].set(token) }
        return token
    }

    static func chunkFrames(_ channel: TestChannel) -> [[UInt8]] {
        channel.sent.withLock { $0.filter { TestChannel.type(of: $0) == .attachmentChunk } }
    }

    @Test("a peer fetches an attachment by token over one hop, in chunks, with progress")
    func oneHop() async throws {
        let a = try Peer("a"), b = try Peer("b")
        let bytes = Self.blob(20_000)
        let token = try Self.attach(bytes, on: a)
        _ = try b.subscribe("SELECT * FROM photos")
        let connection = connect(a, b, preferredFrameSize: 1024)
        #expect(await connection.caughtUp())
        // Syncing the document moved no attachment bytes.
        #expect(Self.chunkFrames(connection.leftChannel).isEmpty)
        #expect(!b.store.hasAttachment(token))
        let reports = Mutex<[AttachmentProgress]>([])
        let data = try await b.engine.fetchAttachment(token) { progress in reports.withLock { $0.append(progress) } }
        #expect(data == bytes)
        #expect(b.store.hasAttachment(token))
        let seen = reports.withLock { $0 }
        #expect(seen.count > 10)
        #expect(seen.allSatisfy { $0.totalBytes == 20_000 })
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.bytesFetched <= $1.bytesFetched })
        #expect(seen.last?.bytesFetched == 20_000)
        #expect(Self.chunkFrames(connection.leftChannel).allSatisfy { $0.count <= 1024 })
        a.engine.stop(); b.engine.stop()
    }

    @Test("chunks fit a Bluetooth LE link's frame", arguments: [243, 100, 64])
    func chunksFitSmallFrames(frameSize: Int) async throws {
        let a = try Peer("a"), b = try Peer("b")
        let bytes = Self.blob(3_000)
        let token = try Self.attach(bytes, on: a)
        let connection = connect(a, b, preferredFrameSize: frameSize)
        #expect(await connection.caughtUp())
        #expect(try await b.engine.fetchAttachment(token) == bytes)
        let frames = Self.chunkFrames(connection.leftChannel)
        #expect(frames.allSatisfy { $0.count <= frameSize }, "largest chunk frame: \(frames.map(\.count).max() ?? 0)")
        // Not needlessly small either: a chunk frame costs about 50 bytes beyond its data.
        #expect(frames.count <= 3_000 / (frameSize - 50) + 1, "\(frames.count) chunk frames")
        a.engine.stop(); b.engine.stop()
    }

    @Test("across two hops: c fetches through b, which has not got the blob, from a")
    func twoHops() async throws {
        let a = try Peer("a"), b = try Peer("b"), c = try Peer("c")
        let bytes = Self.blob(10_000)
        let token = try Self.attach(bytes, on: a)
        _ = try b.subscribe("SELECT * FROM photos")
        _ = try c.subscribe("SELECT * FROM photos")
        let ab = connect(a, b, preferredFrameSize: 512), bc = connect(b, c, preferredFrameSize: 512)
        #expect(await ab.caughtUp())
        #expect(try await eventually { try ids(c.store, "photos") == ["photo"] })
        #expect(!b.store.hasAttachment(token))
        #expect(try await c.engine.fetchAttachment(token) == bytes)
        #expect(c.store.hasAttachment(token))
        #expect(!Self.chunkFrames(ab.leftChannel).isEmpty && !Self.chunkFrames(bc.leftChannel).isEmpty)
        for peer in [a, b, c] { peer.engine.stop() }
    }

    @Test("across two hops, a fetch cut mid-way resumes from the bytes that arrived and verifies")
    func interruptedTwoHops() async throws {
        let a = try Peer("a"), b = try Peer("b"), c = try Peer("c")
        let bytes = Self.blob(30_000)
        let token = try Self.attach(bytes, on: a)
        let ab = connect(a, b, preferredFrameSize: 512)
        var bc = connect(b, c, preferredFrameSize: 512)
        #expect(await ab.caughtUp())
        #expect(await bc.caughtUp())
        // The b—c link dies after b has passed on ten chunks.
        bc.leftChannel.cut(after: 10, where: TestChannel.isType(.attachmentChunk))
        let reports = Mutex<[AttachmentProgress]>([])
        let fetch = Task { try await c.engine.fetchAttachment(token) { progress in reports.withLock { $0.append(progress) } } }
        await bc.ended()
        let arrived = c.store.receivedAttachmentBytes(hash: token.hash)
        #expect(arrived > 0 && arrived < 30_000)
        bc = connect(b, c, preferredFrameSize: 512)
        #expect(try await fetch.value == bytes)
        // The second b—c session carried only the bytes that had not arrived.
        let resent = Self.chunkFrames(bc.leftChannel).count
        #expect(resent < 30_000 / 400, "\(resent) chunk frames after the reconnect")
        #expect(reports.withLock { $0.last?.bytesFetched } == 30_000)
        #expect(c.store.hasAttachment(token))
        _ = ab
        for peer in [a, b, c] { peer.engine.stop() }
    }

    @Test("a relay cut from the source mid-way resumes when it reconnects, and the fetcher still gets the blob")
    func relayInterrupted() async throws {
        let a = try Peer("a"), b = try Peer("b"), c = try Peer("c")
        let bytes = Self.blob(30_000)
        let token = try Self.attach(bytes, on: a)
        var ab = connect(a, b, preferredFrameSize: 512)
        let bc = connect(b, c, preferredFrameSize: 512)
        #expect(await ab.caughtUp())
        #expect(await bc.caughtUp())
        ab.leftChannel.cut(after: 10, where: TestChannel.isType(.attachmentChunk))
        let fetch = Task { try await c.engine.fetchAttachment(token) }
        await ab.ended()
        #expect(b.store.receivedAttachmentBytes(hash: token.hash) > 0)
        ab = connect(a, b, preferredFrameSize: 512)
        #expect(try await fetch.value == bytes)
        #expect(Self.chunkFrames(ab.leftChannel).count < 30_000 / 400)
        for peer in [a, b, c] { peer.engine.stop() }
    }

    @Test("a fetch cut mid-way resumes after both stores restart")
    func resumesAfterRestart() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let a = try Peer("a")
        let bytes = Self.blob(20_000)
        let token = try Self.attach(bytes, on: a)
        do {
            let b = try Peer("b", store: Store(directory: directory.url))
            let connection = connect(a, b, preferredFrameSize: 512)
            connection.leftChannel.cut(after: 8, where: TestChannel.isType(.attachmentChunk))
            let fetch = Task { try await b.engine.fetchAttachment(token) }
            await connection.ended()
            #expect(b.store.receivedAttachmentBytes(hash: token.hash) > 0)
            fetch.cancel()
            await #expect(throws: CancellationError.self) { try await fetch.value }
            b.engine.stop()
        }
        var store: Store?
        #expect(await eventually {
            store = try? Store(directory: directory.url)
            return store != nil
        })
        let b = try Peer("b", store: store!)
        store = nil
        let arrived = b.store.receivedAttachmentBytes(hash: token.hash)
        #expect(arrived > 0)
        let connection = connect(a, b, preferredFrameSize: 512)
        #expect(try await b.engine.fetchAttachment(token) == bytes)
        let sent = Self.chunkFrames(connection.leftChannel).count
        #expect(sent < 20_000 / 400, "\(sent) chunk frames after the restart")
        a.engine.stop(); b.engine.stop()
    }

    @Test("a peer that serves wrong bytes fails verification, and nothing of them is kept")
    func wrongBytes() async throws {
        let b = try Peer("b")
        let bytes = Self.blob(5_000)
        // The token of the real bytes, made in a store of its own.
        let token = try Store(inMemory: Store.Options()).newAttachment(bytes)
        let (liar, channel) = TestChannel.pair(preferredFrameSize: 1024)
        let session = b.engine.connect(channel)
        // The liar answers every request with the right length and the wrong content.
        let script = Task {
            var encoder = FrameEncoder(), decoder = FrameDecoder()
            try liar.sendRaw(encoder.encode(.hello(Hello(peerID: [1, 2, 3, 4, 5, 6, 7, 8], protocolVersion: SyncSession.protocolVersion))))
            encoder.context.intern(b.store.site)
            for await frame in liar.incoming {
                let message = try decoder.decode(frame)
                // Once b's hello is in, both sites are interned, as a session does.
                if case .hello? = message { decoder.context.intern(SiteID(peerID: [1, 2, 3, 4, 5, 6, 7, 8])!) }
                guard case .attachmentRequest(let request)? = message else { continue }
                var offset = Int(request.offset)
                while offset < 5_000 {
                    let count = min(Int(request.chunkSize), 5_000 - offset)
                    let junk = [UInt8](repeating: 0xAB, count: count)
                    try liar.sendRaw(encoder.encode(.attachmentChunk(AttachmentChunk(hash: request.hash, offset: UInt64(offset), totalLength: 5_000, bytes: junk))))
                    offset += count
                }
            }
        }
        await #expect(throws: (any Error).self) { try await b.engine.fetchAttachment(token) }
        #expect(!b.store.hasAttachment(token))
        #expect(b.store.receivedAttachmentBytes(hash: token.hash) == 0)
        #expect(b.log.contains(.warning, "does not match its hash"))
        session.close()
        script.cancel()
        b.engine.stop()
    }
}

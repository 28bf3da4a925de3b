import ArcusCRDT
import ArcusStore
import ArcusSync
import ArcusTestSupport
import Foundation
import Synchronization
import Testing

/// `SyncEngine.attachmentFetches`: what the agent shows of the fetches under way.
@Suite("Attachment fetch status")
struct AttachmentFetchStatusTests {
    @Test("a fetch shows as waiting with no peer, as fetching with its source and progress while it runs, and is gone once complete")
    func snapshotFollowsTheFetch() async throws {
        let a = try Peer("a"), b = try Peer("b")
        let bytes = AttachmentFetchTests.blob(40_000, seed: 11)
        let token = try AttachmentFetchTests.attach(bytes, on: a)
        _ = try b.subscribe("SELECT * FROM photos")
        #expect(b.engine.attachmentFetches.isEmpty)

        let seen = Mutex<[[AttachmentFetchStatus]]>([])
        let fetch = Task {
            try await b.engine.fetchAttachment(token) { _ in
                let snapshot = b.engine.attachmentFetches
                seen.withLock { $0.append(snapshot) }
            }
        }
        // No session yet: the fetch waits, with the token's length and nothing fetched.
        let waiting = AttachmentFetchStatus(hashHex: token.hashHex, bytesFetched: 0, totalBytes: 40_000, source: nil, state: .waiting)
        #expect(await eventually { b.engine.attachmentFetches == [waiting] }, "\(b.engine.attachmentFetches)")
        #expect(a.engine.attachmentFetches.isEmpty)

        let connection = connect(a, b, preferredFrameSize: 1024)
        #expect(try await fetch.value == bytes)
        var snapshots = seen.withLock { $0 }
        // The last report is the store's, once the blob is complete: nothing under way then.
        #expect(snapshots.last == [])
        snapshots = snapshots.dropLast()
        #expect(snapshots.count > 10, "\(snapshots.count) progress reports")
        // During the fetch: exactly this one, fetching from a session, its bytes growing.
        #expect(snapshots.allSatisfy { $0.count == 1 && $0[0].hashHex == token.hashHex && $0[0].state == .fetching })
        #expect(snapshots.allSatisfy { $0.first?.source != nil && $0.first?.totalBytes == 40_000 })
        let fetched = snapshots.compactMap { $0.first?.bytesFetched }
        #expect(zip(fetched, fetched.dropFirst()).allSatisfy { $0 < $1 }, "\(fetched)")
        #expect(fetched.first.map { $0 > 0 && $0 < 40_000 } == true && fetched.last == 40_000, "\(fetched)")
        // Complete and verified: nothing under way on either side.
        #expect(b.engine.attachmentFetches.isEmpty)
        #expect(a.engine.attachmentFetches.isEmpty)
        connection.close()
        a.engine.stop(); b.engine.stop()
    }

    @Test("fetching by hash alone takes the length from the document here that holds the token, never from the peer; a hash no document references is refused")
    func fetchByHash() async throws {
        let a = try Peer("a"), b = try Peer("b")
        let bytes = AttachmentFetchTests.blob(9_000, seed: 5)
        let token = try AttachmentFetchTests.attach(bytes, on: a)
        _ = try b.subscribe("SELECT * FROM photos")
        let connection = connect(a, b, preferredFrameSize: 512)
        #expect(await connection.caughtUp())
        let fetch = Task { try await b.engine.fetchAttachment(hash: token.hash) }
        #expect(try await fetch.value == 9_000)
        #expect(try b.store.readAttachment(hash: token.hash, offset: 0, count: 10_000).map { Data($0) } == bytes)
        #expect(b.engine.attachmentFetches.isEmpty)
        await #expect(throws: StoreError.self) { try await b.engine.fetchAttachment(hash: [1, 2, 3]) }
        // No document here references this one: its length is unknown, so it is not fetched.
        let unknown = [UInt8](repeating: 9, count: 32)
        let refusal = await #expect(throws: StoreError.self) { try await b.engine.fetchAttachment(hash: unknown) }
        #expect(refusal.map { "\($0)".contains("no document in this store references") } == true, "\(String(describing: refusal))")
        #expect(b.engine.attachmentFetches.isEmpty)
        connection.close()
        a.engine.stop(); b.engine.stop()
    }
}

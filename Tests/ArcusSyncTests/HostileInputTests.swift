import ArcusCRDT
import ArcusCodec
import ArcusStore
import ArcusSync
import ArcusTestSupport
import Foundation
import Testing

/// Malformed or hostile frames end the session with a logged reason and leave the store as it was.
@Suite("Hostile input")
struct HostileInputTests {
    static let helloFrame: [UInt8] = {
        var encoder = FrameEncoder()
        return encoder.encode(.hello(Hello(peerID: [6, 6, 6, 6, 6, 6, 6, 6], protocolVersion: SyncSession.protocolVersion, name: "mallory")))
    }()

    /// Runs `frames` (made with one encoder, hello first unless `hello` is false) against a
    /// subscribing peer, and returns why its session ended.
    static func attack(hello: Bool = true, _ frames: (inout FrameEncoder) -> [[UInt8]]) async throws -> (reason: String?, peer: Peer) {
        let victim = try Peer("victim")
        try victim.store.insertOrders(0..<5)
        _ = try victim.subscribe("SELECT * FROM orders")
        let before = try contents(victim.store, "orders")
        let records = try victim.store.syncRecords(prefix: "")
        let (mallory, channel) = TestChannel.pair()
        let session = victim.engine.connect(channel)
        var encoder = FrameEncoder()
        if hello {
            try mallory.sendRaw(encoder.encode(.hello(Hello(peerID: [6, 6, 6, 6, 6, 6, 6, 6], protocolVersion: SyncSession.protocolVersion, name: "mallory"))))
            // As a peer does once it has the other's hello: both sites are interned.
            encoder.context.intern(victim.store.site)
        }
        for frame in frames(&encoder) { try? mallory.sendRaw(frame) }
        // A session the frames should have ended but did not fails the test, not hangs the run.
        let endedByFrames = await withTaskGroup(of: Bool.self) { group in
            group.addTask { await session.waitUntilEnded(); return true }
            group.addTask {
                try? await Task.sleep(for: .seconds(30))
                if !Task.isCancelled { victim.engine.stop() }
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        #expect(endedByFrames, "the hostile frames did not end the session within 30 s")
        #expect(try contents(victim.store, "orders") == before)
        // The only records that may change are the victim's notes on the subscription it announced.
        #expect(try victim.store.syncRecords(prefix: "sub/").map(\.key) == records.filter { $0.key.hasPrefix("sub/") }.map(\.key))
        #expect(victim.log.all.contains { $0.0 == .error })
        victim.engine.stop()
        return (await session.endReason, victim)
    }

    static func batch(_ documents: [(String, String)], subscription: UInt64) -> SyncMessage {
        var deltas: [DocumentDelta] = []
        var state = DocumentState()
        for (collection, id) in documents.sorted(by: { $0.0 < $1.0 || ($0.0 == $1.0 && $0.1 < $1.1) }) {
            state = DocumentState()
            _ = state.upsert(["status": "HACKED"], strategy: .merge, at: Stamp(time: Timestamp(milliseconds: 1_900_000_000_000, logical: 0), site: SiteID(666)), hints: .objectsAreMaps)
            deltas.append(DocumentDelta(key: DocumentKey(collection: collection, id: .string(id)), state: state))
        }
        return .deltaBatch(DeltaBatch(documents: deltas, covers: VersionVector(), position: 1, subscriptionID: subscription))
    }

    @Test("random bytes")
    func randomBytes() async throws {
        var rng = SystemRandomNumberGenerator()
        let (reason, _) = try await Self.attack(hello: false) { _ in [(0..<64).map { _ in UInt8.random(in: 0...255, using: &rng) }] }
        #expect(reason?.contains("breaks the protocol") == true, "\(reason ?? "nil")")
    }

    @Test("a truncated frame")
    func truncated() async throws {
        let (reason, _) = try await Self.attack { encoder in
            let frame = encoder.encode(Self.batch([("orders", "o0001")], subscription: 1))
            return [Array(frame.dropLast(3))]
        }
        #expect(reason?.contains("breaks the protocol") == true, "\(reason ?? "nil")")
    }

    @Test("a delta batch for a subscription never announced")
    func unknownSubscription() async throws {
        let (reason, _) = try await Self.attack { encoder in [encoder.encode(Self.batch([("orders", "o0001")], subscription: 77))] }
        #expect(reason?.contains("never announced") == true, "\(reason ?? "nil")")
    }

    @Test("a delta batch carrying documents the subscription does not ask for")
    func outsideSubscription() async throws {
        let (reason, _) = try await Self.attack { encoder in
            [encoder.encode(Self.batch([("orders", "o0001"), ("secrets", "s1")], subscription: 1))]
        }
        #expect(reason?.contains("does not ask for") == true, "\(reason ?? "nil")")
    }

    @Test("a second hello")
    func secondHello() async throws {
        let (reason, _) = try await Self.attack { _ in [Self.helloFrame] }
        #expect(reason?.contains("second hello") == true, "\(reason ?? "nil")")
    }

    @Test("a frame before the hello")
    func beforeHello() async throws {
        let (reason, _) = try await Self.attack(hello: false) { encoder in [encoder.encode(Self.batch([("orders", "o0001")], subscription: 1))] }
        #expect(reason?.contains("before the peer's hello") == true, "\(reason ?? "nil")")
    }

    @Test("an oversize declared length")
    func oversize() async throws {
        let (reason, _) = try await Self.attack { _ in
            // A batch frame header declaring a 1 GiB payload, then a little of it.
            [[FrameHeader.currentVersion << 5 | MessageType.deltaBatch.rawValue, 0x80, 0x80, 0x80, 0x80, 0x04] + [UInt8](repeating: 0, count: 32)]
        }
        #expect(reason?.contains("frame payload length") == true, "\(reason ?? "nil")")
    }

    @Test("an acknowledgement of a position never sent, then garbage: nothing of it sticks")
    func bogusAckThenGarbage() async throws {
        let (reason, _) = try await Self.attack { encoder in
            [encoder.encode(.ack(Ack(position: 1_000_000, subscriptionID: 1))), [0xFF, 0x00]]
        }
        #expect(reason != nil)
    }

    @Test("random mutations of a valid batch never change the store", arguments: SeededRandom.seeds(count: 1, test: "hostile-mutations"))
    func mutatedBatches(seed: UInt64) async throws {
        print("hostile-mutations seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        for _ in 0..<20 {
            let (reason, _) = try await Self.attack { encoder in
                var frame = encoder.encode(Self.batch([("secrets", "s1")], subscription: 5))
                for _ in 0..<Int.random(in: 1...4, using: &rng) {
                    frame[Int.random(in: 0..<frame.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                }
                return [frame]
            }
            #expect(reason != nil)
        }
    }
}

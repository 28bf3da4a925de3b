import ArcusLoopback
import ArcusMesh
import ArcusTestSupport
import ArcusTransportConformance
import Synchronization
import Testing

/// What a receiving consumer took, and when.
final class Arrivals: Sendable {
    private let log = Mutex<[(index: Int?, at: ContinuousClock.Instant)]>([])

    func record(_ message: [UInt8]) {
        let entry = (index(ofNumbered: message), ContinuousClock.now)
        log.withLock { $0.append(entry) }
    }

    var indices: [Int?] { log.withLock { $0.map(\.index) } }
    var count: Int { log.withLock { $0.count } }

    /// When the first message numbered `index` or more arrived.
    func firstArrival(ofIndexAtLeast index: Int) -> ContinuousClock.Instant? {
        log.withLock { $0.first { ($0.index ?? -1) >= index }?.at }
    }
}

/// Failover across a fast and a slow link under continuous sends: nothing lost, nothing twice,
/// in order. Time bounds are five to ten times what the design needs, so a busy machine passes.
@Suite("Session failover", .serialized, .timeLimit(.minutes(2)))
struct SessionFailoverTests {
    @Test("the fast link is cut (the sender must notice by heartbeats) and restored: 0 lost, 0 duplicated, in order, switch well within 1 s ×5",
          arguments: SeededRandom.seeds(count: 2, test: "session failover"))
    func failoverUnderContinuousSends(seed: UInt64) async throws {
        print("session failover: seed \(seed) (replay with ARCUS_TEST_SEED=\(seed))")
        var random = SeededRandom(seed: seed)
        let peers = SessionTestPeers(configuration: SessionConfiguration())
        let fast = try await peers.severableLink(.lan, kind: .lan)
        try await peers.link(LoopbackConditions.ble.accelerated(by: 4), kind: .bluetooth)
        let sender = await peers.alphaSession, receiver = await peers.bravoSession
        try await eventually("both links bound") { let first = await sender.linkStatuses.count; let second = await receiver.linkStatuses.count; return first == 2 && second == 2 }
        #expect(await sender.activeLink?.kind == .lan)
        let lanRemovals = Task {
            var reasons: [LinkRemoval] = []
            for await event in sender.events {
                if case .linkRemoved(let link, let reason) = event, link.kind == .lan { reasons.append(reason) }
            }
            return reasons
        }

        let arrivals = Arrivals()
        let consumer = Task { for await message in receiver.incoming { arrivals.record(message) } }
        let count = 600
        let cutAt = Int.random(in: 100...200, using: &random)
        let restoreAt = cutAt + Int.random(in: 200...300, using: &random)
        var cutTime: ContinuousClock.Instant?
        for index in 0..<count {
            // Sizes around the BLE MTU, so that some messages travel in several fragments there.
            try await sender.send(numberedMessage(index, padding: Int.random(in: 0...400, using: &random)))
            try await Task.sleep(for: .milliseconds(2))
            if index == cutAt {
                // Out of range: nothing more either way, and neither end is told.
                cutTime = .now
                fast.bravo.sever()
            }
            if index == restoreAt {
                #expect(await sender.activeLink?.kind == .bluetooth, "traffic moved to the slow link")
                try await peers.link(.lan, kind: .lan, name: "lan again")
            }
        }
        try await eventually("all \(count) messages arrive", within: .seconds(30)) { arrivals.count >= count }
        try await Task.sleep(for: .milliseconds(100))
        #expect(arrivals.indices == Array(0..<count), "lost, duplicated, reordered or corrupted")
        // From the cut until the first message sent after it arrives: it can only have come over
        // the slow link, once the sender noticed that the fast one was dead.
        let cut = try #require(cutTime)
        let switchTime = try #require(arrivals.firstArrival(ofIndexAtLeast: cutAt + 1)) - cut
        print("session failover: traffic resumed \(switchTime) after the cut; \(await receiver.duplicatesDropped) duplicates dropped")
        // Heartbeats every 250 ms, dead after 3 missed: about 0.8 s by design; five times that here.
        #expect(switchTime < .seconds(5))
        try await eventually("traffic returns to the restored LAN link") { await sender.activeLink?.kind == .lan }
        let rtt = await sender.linkStatuses.compactMap(\.roundTrip)
        #expect(!rtt.isEmpty, "heartbeats measured a round trip")
        consumer.cancel()
        await peers.close()
        // Nobody closed the severed link: the sender found out by missed heartbeats (or, on a
        // machine so busy that the restored link came first, let the new link replace it).
        let reasons = await lanRemovals.value
        #expect(reasons.first == .heartbeatsMissed || reasons.first == .duplicate, "the lan links were removed because: \(reasons)")
    }

    @Test("a clean close of the active link moves traffic at once and resends what was in flight")
    func cleanClose() async throws {
        let peers = SessionTestPeers(configuration: SessionConfiguration())
        let fast = try await peers.link(.lan, kind: .lan)
        try await peers.link(.ble.accelerated(by: 4), kind: .bluetooth)
        let sender = await peers.alphaSession, receiver = await peers.bravoSession
        try await eventually("both links bound") { await receiver.linkStatuses.count == 2 }
        // More than the window of 64: the consumer's acks must keep flowing across the switch.
        async let received = receiver.incoming.next(200, within: .seconds(30))
        for index in 0..<50 { try await sender.send(numberedMessage(index, padding: 300)) }
        fast.alpha.close()
        for index in 50..<200 { try await sender.send(numberedMessage(index, padding: 300)) }
        #expect(try await received.map(index(ofNumbered:)) == Array(0..<200))
        #expect(await sender.activeLink?.kind == .bluetooth)
        await peers.close()
    }

    @Test("the session prefers LAN over Bluetooth, and a much faster Bluetooth link over a slow LAN")
    func linkPreference() {
        let preference = LinkPreference()
        #expect(preference.prefers((.lan, nil), over: (.bluetooth, nil)))
        #expect(preference.prefers((.lan, .milliseconds(30)), over: (.bluetooth, .milliseconds(20))))
        #expect(preference.prefers((.bluetooth, .milliseconds(20)), over: (.lan, .milliseconds(500))))
        #expect(preference.prefers((.bluetooth, nil), over: (.cloud, nil)))
        #expect(preference.prefers((.cloud, nil), over: (.loopback, nil)))
    }
}

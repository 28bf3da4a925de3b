import ArcusLoopback
@testable import ArcusMesh
import ArcusTestSupport
import ArcusTransportConformance
import Synchronization
import Testing

/// Which link a session sends on once throughput counts, and bulk spread over two links. Nothing
/// here asserts a speed: the emulated rates only set which link is faster, and the tests look at
/// the session's choice and at what the receiver got.
@Suite("Session link choice by throughput, and bulk over two links", .serialized, .timeLimit(.minutes(2)))
struct SessionLinkChoiceTests {
    /// The round-trip rule out of the way: a loaded link's heartbeats queue behind its data, which
    /// can move traffic by itself, and these tests are about throughput and bulk alone. Slow
    /// heartbeats by default, so that a starved test process does not lose links.
    static func throughputOnly(_ base: SessionConfiguration = SessionTestPeers.quickConfiguration) -> SessionConfiguration {
        var configuration = base
        configuration.preference.slownessMargin = .seconds(3600)
        return configuration
    }

    static let messageSize = 16 << 10

    /// Conditions that differ only in rate, with the default queue (64 KiB in flight).
    static func emulated(bytesPerSecond: Double) -> LoopbackConditions {
        LoopbackConditions(mtu: 8 << 10, bytesPerSecond: bytesPerSecond)
    }

    // MARK: The choice

    @Test("throughput corrects the kind order only when a link is clearly faster; a slower link helps bulk unless clearly slower")
    func preferenceByThroughput() {
        let preference = LinkPreference()
        let lan = LinkPreference.Candidate(kind: .lan, throughput: 100_000)
        #expect(preference.prefers(LinkPreference.Candidate(kind: .bluetooth, throughput: 500_000), over: lan))
        #expect(!preference.prefers(LinkPreference.Candidate(kind: .bluetooth, throughput: 300_000), over: lan))
        #expect(preference.prefers(lan, over: LinkPreference.Candidate(kind: .bluetooth, throughput: 300_000)))
        // One figure unknown: the kind order stands.
        #expect(preference.prefers(LinkPreference.Candidate(kind: .lan), over: LinkPreference.Candidate(kind: .bluetooth, throughput: 1e9)))
        // A clearly shorter round trip still wins over throughput.
        let quickButNarrow = LinkPreference.Candidate(kind: .bluetooth, roundTrip: .milliseconds(5), throughput: 10_000)
        let wideButSlow = LinkPreference.Candidate(kind: .lan, roundTrip: .milliseconds(500), throughput: 10_000_000)
        #expect(preference.prefers(quickButNarrow, over: wideButSlow))

        #expect(preference.helps(LinkPreference.Candidate(kind: .bluetooth, throughput: 30_000), alongside: lan))
        #expect(!preference.helps(LinkPreference.Candidate(kind: .bluetooth, throughput: 20_000), alongside: lan))
        #expect(preference.helps(LinkPreference.Candidate(kind: .bluetooth), alongside: lan))
    }

    @Test("before anything is measured, the transports' rates decide: a much faster Bluetooth link wins over a slow LAN at once")
    func reportedRatesDecideFirst() async throws {
        let peers = SessionTestPeers(configuration: Self.throughputOnly())
        try await peers.link(Self.emulated(bytesPerSecond: 50_000), kind: .lan)
        try await peers.link(Self.emulated(bytesPerSecond: 2_000_000), kind: .bluetooth)
        let sender = await peers.alphaSession
        try await eventually("both links bound") { await sender.linkStatuses.count == 2 }
        #expect(await sender.activeLink?.kind == .bluetooth)
        let figures = await sender.linkFigures
        #expect(figures.allSatisfy { !$0.isThroughputMeasured && $0.throughput != nil }, "\(figures)")
        await peers.close()
    }

    @Test("a slow LAN beside a much faster Bluetooth link, neither rated by its transport: after a bulk transfer the session sends on Bluetooth")
    func measuredThroughputMovesTraffic() async throws {
        let peers = SessionTestPeers(configuration: Self.throughputOnly())
        try await peers.unratedLink(Self.emulated(bytesPerSecond: 100_000), kind: .lan)
        try await peers.unratedLink(Self.emulated(bytesPerSecond: 4_000_000), kind: .bluetooth)
        let sender = await peers.alphaSession, receiver = await peers.bravoSession
        try await eventually("both links bound") { await sender.linkStatuses.count == 2 }
        #expect(await sender.activeLink?.kind == .lan, "the kind order, with nothing measured")

        let count = 192
        async let received = receiver.incoming.next(count, within: .seconds(60))
        for index in 0..<count { try await sender.send(numberedMessage(index, padding: Self.messageSize)) }
        #expect(try await received.map(index(ofNumbered:)) == Array(0..<count))

        let figures = await sender.linkFigures
        print("session link choice: after the transfer \(figures)")
        #expect(await sender.activeLink?.kind == .bluetooth)
        let bluetooth = try #require(figures.first { $0.kind == .bluetooth })
        let lan = try #require(figures.first { $0.kind == .lan })
        #expect(bluetooth.isThroughputMeasured && lan.isThroughputMeasured)
        #expect((bluetooth.throughput ?? 0) > (lan.throughput ?? .infinity))
        await peers.close()
    }

    @Test("throughputs within the factor never move traffic off the kind order, however the measurements jitter")
    func similarThroughputsKeepTheKindOrder() async throws {
        let peers = SessionTestPeers(configuration: Self.throughputOnly())
        try await peers.unratedLink(Self.emulated(bytesPerSecond: 200_000), kind: .lan)
        // Twice as fast: faster, but not clearly.
        try await peers.unratedLink(Self.emulated(bytesPerSecond: 400_000), kind: .bluetooth)
        let sender = await peers.alphaSession, receiver = await peers.bravoSession
        try await eventually("both links bound") { await sender.linkStatuses.count == 2 }
        #expect(await sender.activeLink?.kind == .lan)
        let choices = Mutex<[LinkKind?]>([])
        let watcher = Task {
            for await event in sender.events {
                if case .activeLinkChanged(let link) = event { choices.withLock { $0.append(link?.kind) } }
            }
        }

        let count = 96
        async let received = receiver.incoming.next(count, within: .seconds(60))
        for index in 0..<count { try await sender.send(numberedMessage(index, padding: Self.messageSize)) }
        #expect(try await received.map(index(ofNumbered:)) == Array(0..<count))

        let figures = await sender.linkFigures
        print("session link choice: after the transfer \(figures)")
        #expect(figures.allSatisfy { $0.isThroughputMeasured }, "both links were measured: \(figures)")
        #expect(await sender.activeLink?.kind == .lan)
        // Read before closing: closing lets go of the LAN link first, which moves traffic.
        let kinds = choices.withLock { $0 }
        #expect(kinds.allSatisfy { $0 != .bluetooth }, "traffic moved to Bluetooth at some point: \(kinds)")
        watcher.cancel()
        await peers.close()
    }

    // MARK: Bulk over two links

    @Test("a large transfer over a saturated link also uses the second: both carry data, the receiver gets each message once, in order")
    func bulkSpreadsOverTwoLinks() async throws {
        let peers = SessionTestPeers(configuration: Self.throughputOnly())
        try await peers.link(Self.emulated(bytesPerSecond: 150_000), kind: .lan)
        try await peers.link(Self.emulated(bytesPerSecond: 150_000), kind: .bluetooth)
        let sender = await peers.alphaSession, receiver = await peers.bravoSession
        try await eventually("both links bound") { await receiver.linkStatuses.count == 2 }

        let count = 64
        async let received = receiver.incoming.next(count, within: .seconds(60))
        for index in 0..<count { try await sender.send(numberedMessage(index, padding: Self.messageSize)) }
        #expect(try await received.map(index(ofNumbered:)) == Array(0..<count), "lost, duplicated, reordered or corrupted")

        let links = await receiver.linkStatuses
        print("session bulk: data frames per link \(links.map { "\($0.kind): \($0.dataFramesReceived)" })")
        #expect(links.count == 2)
        #expect(links.allSatisfy { $0.dataFramesReceived > 0 }, "a link carried no data: \(links)")
        // Traffic never moved (equal links), so nothing was sent twice: each message took one link.
        #expect(await sender.activeLink?.kind == .lan)
        #expect(await receiver.duplicatesDropped == 0)
        await peers.close()
    }

    @Test("a second link much slower than the first is left out of bulk once measured, and never takes over")
    func clearlySlowerLinkLeftOutOfBulk() async throws {
        let peers = SessionTestPeers(configuration: Self.throughputOnly())
        try await peers.unratedLink(Self.emulated(bytesPerSecond: 4_000_000), kind: .lan)
        try await peers.unratedLink(Self.emulated(bytesPerSecond: 50_000), kind: .bluetooth)
        let sender = await peers.alphaSession, receiver = await peers.bravoSession
        try await eventually("both links bound") { await sender.linkStatuses.count == 2 }
        #expect(await sender.linkFigures.first { $0.kind == .bluetooth }?.carriesBulk == true, "unmeasured, it may help")

        let count = 192
        async let received = receiver.incoming.next(count, within: .seconds(60))
        for index in 0..<count { try await sender.send(numberedMessage(index, padding: Self.messageSize)) }
        #expect(try await received.map(index(ofNumbered:)) == Array(0..<count))

        let figures = await sender.linkFigures
        print("session link choice: after the transfer \(figures)")
        let bluetooth = try #require(figures.first { $0.kind == .bluetooth })
        #expect(bluetooth.isThroughputMeasured, "the slow link carried some bulk before it was measured")
        #expect(!bluetooth.carriesBulk)
        #expect(await sender.activeLink?.kind == .lan)
        await peers.close()
    }

    @Test("small messages stay on the best link: they never saturate it")
    func smallTrafficStaysOnTheBestLink() async throws {
        let peers = SessionTestPeers(configuration: Self.throughputOnly())
        try await peers.link(Self.emulated(bytesPerSecond: 150_000), kind: .lan)
        try await peers.link(Self.emulated(bytesPerSecond: 150_000), kind: .bluetooth)
        let sender = await peers.alphaSession, receiver = await peers.bravoSession
        try await eventually("both links bound") { await receiver.linkStatuses.count == 2 }

        let count = 300
        async let received = receiver.incoming.next(count, within: .seconds(60))
        for index in 0..<count { try await sender.send(numberedMessage(index, padding: 100)) }
        #expect(try await received.map(index(ofNumbered:)) == Array(0..<count))
        let links = await receiver.linkStatuses
        #expect(links.first { $0.kind == .lan }?.dataFramesReceived ?? 0 >= count)
        #expect(links.first { $0.kind == .bluetooth }?.dataFramesReceived == 0, "\(links)")
        await peers.close()
    }

    @Test("one of the two links closes in the middle of a bulk transfer: every message arrives once, in order",
          arguments: SeededRandom.seeds(count: 2, test: "session bulk link close"))
    func bulkSurvivesALinkClosing(seed: UInt64) async throws {
        print("session bulk link close: seed \(seed) (replay with ARCUS_TEST_SEED=\(seed))")
        let peers = SessionTestPeers(configuration: Self.throughputOnly())
        let lan = try await peers.link(Self.emulated(bytesPerSecond: 150_000), kind: .lan)
        let bluetooth = try await peers.link(Self.emulated(bytesPerSecond: 150_000), kind: .bluetooth)
        try await transferLosingALink(between: peers, seed: seed, closing: { lan.alpha.close() }, or: { bluetooth.alpha.close() })
    }

    @Test("one of the two links goes silent in the middle of a bulk transfer: heartbeats find it, every message arrives once, in order",
          arguments: SeededRandom.seeds(count: 2, test: "session bulk link cut"))
    func bulkSurvivesASilentCut(seed: UInt64) async throws {
        print("session bulk link cut: seed \(seed) (replay with ARCUS_TEST_SEED=\(seed))")
        // Heartbeats every 250 ms, dead after 750 ms of silence; the limits below allow 45 s.
        let peers = SessionTestPeers(configuration: Self.throughputOnly(SessionConfiguration()))
        let lan = try await peers.severableLink(Self.emulated(bytesPerSecond: 150_000), kind: .lan)
        let bluetooth = try await peers.severableLink(Self.emulated(bytesPerSecond: 150_000), kind: .bluetooth)
        try await transferLosingALink(between: peers, seed: seed, closing: { lan.bravo.sever() }, or: { bluetooth.bravo.sever() })
    }

    /// Sends 64 large messages over a LAN and a Bluetooth link; once the receiver has some of them
    /// (both links busy), `loseLAN` or `loseBluetooth`, as the seed picks, takes one link away.
    private func transferLosingALink(
        between peers: SessionTestPeers, seed: UInt64,
        closing loseLAN: @Sendable () -> Void, or loseBluetooth: @Sendable () -> Void
    ) async throws {
        var random = SeededRandom(seed: seed)
        let sender = await peers.alphaSession, receiver = await peers.bravoSession
        try await eventually("both links bound") { await receiver.linkStatuses.count == 2 }

        let count = 64
        let losesLAN = Bool.random(using: &random)
        let loseAfter = Int.random(in: 8...40, using: &random)
        print("session bulk: losing the \(losesLAN ? "LAN" : "Bluetooth") link after \(loseAfter) messages arrived")
        let arrivals = Arrivals()
        let consumer = Task { for await message in receiver.incoming { arrivals.record(message) } }
        let producer = Task {
            for index in 0..<count { try await sender.send(numberedMessage(index, padding: Self.messageSize)) }
        }
        try await eventually("\(loseAfter) messages arrive") { arrivals.count >= loseAfter }
        #expect(await receiver.linkStatuses.allSatisfy { $0.dataFramesReceived > 0 }, "both links carried data before the loss")
        losesLAN ? loseLAN() : loseBluetooth()

        try await producer.value
        try await eventually("all \(count) messages arrive") { arrivals.count >= count }
        try await Task.sleep(for: .milliseconds(100))
        #expect(arrivals.indices == Array(0..<count), "lost, duplicated, reordered or corrupted")
        try await eventually("the sender lets go of the lost link") { await sender.linkStatuses.count == 1 }
        #expect(await sender.linkStatuses.map(\.kind) == [losesLAN ? .bluetooth : .lan])
        consumer.cancel()
        await peers.close()
    }
}

/// A link whose transport does not know its rate, so that only what the session measures decides.
final class UnratedLink: Link {
    let link: LoopbackLink

    init(_ link: LoopbackLink) {
        self.link = link
    }

    var kind: LinkKind { link.kind }
    var mtu: Int { link.mtu }
    var description: String { "\(link.description), unrated" }
    var metrics: LinkMetrics { LinkMetrics(cost: kind.defaultCost) }
    var incoming: AsyncStream<[UInt8]> { link.incoming }
    func send(_ message: [UInt8]) async throws { try await link.send(message) }
    func close() { link.close() }
}

extension SessionTestPeers {
    /// Like `link`, with neither end reporting its rate.
    @discardableResult
    func unratedLink(_ conditions: LoopbackConditions, kind: LinkKind) async throws -> (alpha: LoopbackLink, bravo: LoopbackLink) {
        let (a, b) = Loopback.pair(conditions, name: "\(kind), unrated", kind: kind)
        async let alphaSide = alpha.add(UnratedLink(a), as: .dialer)
        async let bravoSide = bravo.add(UnratedLink(b), as: .acceptor)
        _ = try await (alphaSide, bravoSide)
        return (a, b)
    }
}

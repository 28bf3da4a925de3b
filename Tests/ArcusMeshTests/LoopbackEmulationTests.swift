import ArcusLoopback
import ArcusMesh
import ArcusTestSupport
import ArcusTransportConformance
import Testing

/// What the loopback link emulates: rate, latency, loss, buffering and abrupt failure. Timing
/// checks assert lower bounds, which hold on any machine, and upper bounds only where the
/// alternative is off by an order of magnitude.
@Suite("Loopback emulation", .timeLimit(.minutes(2)))
struct LoopbackEmulationTests {
    private let clock = ContinuousClock()

    @Test("a transfer over a rate-limited link takes at least its size divided by the rate")
    func rateLimit() async throws {
        let conditions = LoopbackConditions(mtu: 1000, bytesPerSecond: 250_000, queueLimitBytes: 16_000)
        let (a, b) = Loopback.pair(conditions)
        defer { a.close() }
        let messages = (0..<50).map { testMessage($0, size: 1000) }

        let start = clock.now
        async let received = b.incoming.next(messages.count)
        for message in messages { try await a.send(message) }
        #expect(try await received == messages)
        let elapsed = clock.now - start

        print("50 000 bytes at 250 000 B/s took \(elapsed): \(Int(50_000 / elapsed.inSeconds)) B/s")
        #expect(elapsed >= .milliseconds(200))
    }

    @Test("messages in flight are pipelined: a burst is on the air at once, not one latency per message")
    func pipelining() async throws {
        let latency = Duration.seconds(2)
        let (a, b) = Loopback.pair(LoopbackConditions(mtu: 100, latency: latency))
        defer { a.close() }
        let messages = (0..<20).map { testMessage($0, size: 50) }

        // Pipelined, the sends return at once and all 20 messages are in the air together;
        // one at a time, the sends alone would take 19 latencies. Asserted by what is in flight,
        // not by how long delivery took, which a busy machine stretches.
        let start = clock.now
        for message in messages { try await a.send(message) }
        let sent = clock.now
        let inFlight = a.bytesInFlight
        #expect(sent - start < latency, "the sends waited for deliveries")
        if sent - start < latency / 2 {
            #expect(inFlight == messages.count * 50, "\(inFlight) bytes in flight after the sends")
        }
        #expect(try await b.incoming.next(messages.count) == messages)
        #expect(clock.now - start >= latency)
    }

    @Test("each message arrives no sooner than its serialisation plus the latency")
    func latency() async throws {
        let conditions = LoopbackConditions(mtu: 1000, bytesPerSecond: 100_000, latency: .milliseconds(30))
        let (a, b) = Loopback.pair(conditions)
        defer { a.close() }
        for index in 0..<5 {
            let message = testMessage(index, size: 1000)
            let sent = clock.now
            try await a.send(message)
            #expect(try await b.incoming.next(1) == [message])
            #expect(clock.now - sent >= .milliseconds(40), "1000 bytes at 100 000 B/s take 10 ms, plus 30 ms latency")
        }
    }

    @Test("a lossy link drops about lossRate of the messages and delivers the rest whole and in order")
    func lossRate() async throws {
        for seed in SeededRandom.seeds(count: 3, test: "loopback loss rate") {
            print("loopback loss rate: seed \(seed) (replay with ARCUS_TEST_SEED=\(seed))")
            let count = 2000, lossRate = 0.25
            let conditions = LoopbackConditions(mtu: 64, lossRate: lossRate, queueLimitBytes: 1 << 20)

            let firstRun = try await deliveredIndices(count: count, conditions: conditions, seed: seed)
            #expect(firstRun.delivered.count + firstRun.lost == count)
            #expect(zip(firstRun.delivered, firstRun.delivered.dropFirst()).allSatisfy(<), "delivered out of order")
            // Binomial: mean 500, standard deviation 19.4; five deviations either side.
            let deviation = (Double(count) * lossRate * (1 - lossRate)).squareRoot()
            #expect(abs(Double(firstRun.lost) - Double(count) * lossRate) <= 5 * deviation, "lost \(firstRun.lost) of \(count)")

            let replay = try await deliveredIndices(count: count, conditions: conditions, seed: seed)
            #expect(replay.delivered == firstRun.delivered, "the same seed dropped different messages")
        }
    }

    /// Sends `count` numbered messages over a lossy pair and returns the numbers that arrived.
    private func deliveredIndices(count: Int, conditions: LoopbackConditions, seed: UInt64) async throws -> (delivered: [Int], lost: Int) {
        let (a, b) = Loopback.pair(conditions, random: SeededRandom(seed: seed))
        defer { a.close() }
        for index in 0..<count {
            try await a.send(withUnsafeBytes(of: UInt32(index).bigEndian, Array.init))
        }
        let lost = a.messagesLost
        let received = try await b.incoming.next(count - lost)
        #expect(a.bytesInFlight == 0, "messages still in flight after all that were not lost arrived")
        #expect(a.statistics.messagesSent == count)
        return (received.map { $0.reduce(0) { $0 << 8 | Int($1) } }, lost)
    }

    @Test("on a slow link a fast producer never has more than the queue limit in flight")
    func queueLimitHoldsOnASlowLink() async throws {
        let conditions = LoopbackConditions(mtu: 512, bytesPerSecond: 100_000, queueLimitBytes: 4096)
        let (a, b) = Loopback.pair(conditions)
        defer { a.close() }
        let producer = Producer(link: a, messageSize: 512, count: 40)

        let sampler = Task {
            var most = 0
            while !producer.isDone {
                most = max(most, a.bytesInFlight)
                try await Task.sleep(for: .milliseconds(1))
            }
            return most
        }
        async let received = b.incoming.next(producer.count)
        try await within(.seconds(45), "the producer") { try await producer.run() }
        #expect(try await received == (0..<producer.count).map(producer.message))
        let most = try await sampler.value
        #expect(most > 0)
        #expect(most <= 4096)
    }

    @Test("after a drop, the peer hears nothing and its sends fill the queue, then suspend")
    func dropBeforeThePeerNotices() async throws {
        let (a, b) = Loopback.pair(LoopbackConditions(mtu: 100, queueLimitBytes: 300))
        // Long enough that the peer never notices during the test; it closes itself instead.
        a.drop(peerNoticesAfter: .seconds(60))

        #expect(a.isClosed && !b.isClosed)
        await #expect(throws: LinkError.closed) { try await a.send([1]) }
        #expect(try await a.incoming.remaining().isEmpty)

        for index in 0..<3 { try await b.send(testMessage(index, size: 100)) }
        #expect(b.bytesInFlight == 300, "the survivor's messages wait in a queue nobody drains")
        let sentAfterFull = Progress()
        let suspended = Task {
            try await b.send(testMessage(3, size: 100))
            sentAfterFull.advance()
        }
        try await Task.sleep(for: .milliseconds(50))
        #expect(sentAfterFull.value == 0, "a send went through a full queue")

        b.close()
        await #expect(throws: LinkError.closed) { try await suspended.value }
        #expect(try await b.incoming.remaining().isEmpty)
    }

    @Test("after a drop, the peer closes once the detection delay has passed")
    func dropIsNoticedAfterTheDelay() async throws {
        let (a, b) = Loopback.pair(LoopbackConditions(mtu: 100))
        let start = clock.now
        a.drop(peerNoticesAfter: .milliseconds(150))

        #expect(try await b.incoming.remaining(within: .seconds(45)).isEmpty)
        #expect(clock.now - start >= .milliseconds(150))
        #expect(b.isClosed)
        await #expect(throws: LinkError.closed) { try await b.send([1]) }
    }

    @Test("closing wakes a consumer waiting for a message still in the air")
    func closeDuringLatency() async throws {
        let (a, b) = Loopback.pair(LoopbackConditions(mtu: 100, latency: .seconds(120)))
        try await a.send([1, 2, 3])
        let waiting = Task { try await b.incoming.remaining(within: .seconds(60)) }
        try await Task.sleep(for: .milliseconds(20))
        let start = clock.now
        a.close()
        #expect(try await waiting.value.isEmpty)
        // Woken by the close, not by the message's arrival two minutes on.
        #expect(clock.now - start < .seconds(30))
    }

    @Test("a send suspended on a full queue, when cancelled, throws CancellationError and sends nothing")
    func cancelledSend() async throws {
        let (a, b) = Loopback.pair(LoopbackConditions(mtu: 100, queueLimitBytes: 100))
        defer { a.close() }
        let first = testMessage(0, size: 100), cancelled = testMessage(1, size: 100), last = testMessage(2, size: 100)
        try await a.send(first)
        let suspended = Task { try await a.send(cancelled) }
        try await Task.sleep(for: .milliseconds(20))
        suspended.cancel()
        await #expect(throws: CancellationError.self) { try await suspended.value }

        #expect(try await b.incoming.next(1) == [first])
        try await a.send(last)
        #expect(try await b.incoming.next(1) == [last])
        #expect(a.statistics.messagesSent == 2)
    }

    @Test("statistics count the messages and bytes each end sent and received")
    func statistics() async throws {
        let (a, b) = Loopback.pair(.instant)
        defer { a.close() }
        for size in [10, 20, 30] { try await a.send(testMessage(size, size: size)) }
        try await b.send(testMessage(0, size: 5))
        _ = try await b.incoming.next(2)
        _ = try await a.incoming.next(1)

        #expect(a.statistics.messagesSent == 3 && a.statistics.bytesSent == 60)
        #expect(a.statistics.messagesReceived == 1 && a.statistics.bytesReceived == 5)
        #expect(b.statistics.messagesSent == 1 && b.statistics.bytesSent == 5)
        #expect(b.statistics.messagesReceived == 2 && b.statistics.bytesReceived == 30)
        #expect(a.bytesInFlight == 30, "the third message is waiting for b's consumer")
    }

    @Test("accelerating a link scales its rate and latency and keeps its MTU, loss and buffering")
    func acceleration() {
        let ble = LoopbackConditions.ble, fast = ble.accelerated(by: 10)
        #expect(fast.bytesPerSecond == 200_000)
        #expect(fast.latency == .microseconds(1500))
        #expect(fast.mtu == ble.mtu && fast.lossRate == ble.lossRate && fast.queueLimitBytes == ble.queueLimitBytes)
        #expect(LoopbackConditions.instant.accelerated(by: 10) == .instant)
    }
}

extension Duration {
    var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) * 1e-18
    }
}

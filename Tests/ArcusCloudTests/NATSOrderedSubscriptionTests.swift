import ArcusCloud
import ArcusTestSupport
import Testing

@Suite("NATS ordered subscriptions", .timeLimit(.minutes(2)))
struct NATSOrderedSubscriptionTests {
    static let stream = NATSStreamConfig(name: "RELAY", subjects: ["relay.>"], maxAge: .seconds(3_600))

    @Test("a subscriber whose network is cut receives everything published meanwhile, in order, once")
    func acrossANetworkCut() async throws {
        try await receivesEverythingAcrossACut(lasting: .zero)
    }

    @Test("a cut outlasting the server's consumer (inactive threshold) loses nothing either")
    func acrossALongNetworkCut() async throws {
        // libnats' ordered consumers ask the server to drop them 5 s after their client goes.
        try await receivesEverythingAcrossACut(lasting: .seconds(8))
    }

    private func receivesEverythingAcrossACut(lasting outage: Duration) async throws {
        let server = try NATSServerProcess.start()
        let proxy = try TCPCutProxy(targetPort: server.port)
        defer { proxy.stop() }
        let publisher = try NATSConnection(testOptions(server.url))
        defer { publisher.close() }
        try publisher.ensureStream(Self.stream)

        let subscriber = try NATSConnection(testOptions(proxy.url))
        defer { subscriber.close() }
        let events = RecordedEvents(subscriber)
        let received = ReceivedMessages()
        let subscription = try subscriber.subscribeOrdered("relay.peer") { received.append($0) }
        defer { subscription.cancel() }

        for index in 0..<10 { try publisher.publishPersisted("relay.peer", numberedPayload(index, size: 64)) }
        #expect(await eventually { received.count == 10 })

        proxy.cut()
        #expect(await eventually { events.count(of: .disconnected) >= 1 })
        for index in 10..<510 { try publisher.publishPersisted("relay.peer", numberedPayload(index, size: 64 + index)) }
        try await Task.sleep(for: outage)
        proxy.restore()

        #expect(await eventually { received.count >= 510 })
        try await Task.sleep(for: .milliseconds(500))
        let indexes = received.all.compactMap { payloadIndex($0.payload) }
        #expect(indexes == Array(0..<510))
        #expect(received.all.map(\.streamSequence) == (1...510).map { Optional(UInt64($0)) })
    }

    @Test("a subscriber receives everything published after a server restart, in order, once")
    func acrossAServerRestart() async throws {
        let server = try NATSServerProcess.start()
        let publisher = try NATSConnection(testOptions(server.url))
        defer { publisher.close() }
        try publisher.ensureStream(Self.stream)
        let publisherEvents = RecordedEvents(publisher)

        let subscriber = try NATSConnection(testOptions(server.url))
        defer { subscriber.close() }
        let events = RecordedEvents(subscriber)
        let received = ReceivedMessages()
        let subscription = try subscriber.subscribeOrdered("relay.peer") { received.append($0) }
        defer { subscription.cancel() }

        for index in 0..<10 { try publisher.publishPersisted("relay.peer", numberedPayload(index, size: 64)) }
        #expect(await eventually { received.count == 10 })

        try server.restart()
        #expect(await eventually { events.count(of: .reconnected) >= 1 })
        #expect(await eventually { publisherEvents.count(of: .reconnected) >= 1 })
        var index = 10
        while index < 510 {
            // JetStream may need a moment after the restart to recover the stream.
            do {
                try publisher.publishPersisted("relay.peer", numberedPayload(index, size: 64 + index))
                index += 1
            } catch {
                try await Task.sleep(for: .milliseconds(100))
            }
        }

        #expect(await eventually { received.count >= 510 })
        try await Task.sleep(for: .milliseconds(500))
        let indexes = received.all.compactMap { payloadIndex($0.payload) }
        #expect(indexes == Array(0..<510))
        #expect(received.all.map(\.streamSequence) == (1...510).map { Optional(UInt64($0)) })
    }
}

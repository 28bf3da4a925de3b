import ArcusCloud
import ArcusTestSupport
import Testing

@Suite("NATS publish and subscribe", .timeLimit(.minutes(2)))
struct NATSPublishSubscribeTests {
    @Test("1,000 messages of varied sizes arrive in order and intact")
    func roundTripInOrder() async throws {
        let server = try NATSServerProcess.start(jetStream: false)
        let connection = try NATSConnection(testOptions(server.url))
        defer { connection.close() }
        let received = ReceivedMessages()
        let subscription = try connection.subscribe("arcus.test.>") { received.append($0) }
        defer { subscription.cancel() }
        try connection.flush(within: .seconds(10))

        let sizes = (0..<1_000).map { index in [0, 4, 17, 512, 4_096, 65_000][index % 6] + index % 13 }
        for (index, size) in sizes.enumerated() {
            try connection.publish("arcus.test.\(index % 3)", numberedPayload(index, size: size))
        }
        try connection.flush(within: .seconds(10))

        #expect(await eventually { received.count >= 1_000 })
        let messages = received.all
        #expect(messages.count == 1_000)
        for (index, message) in messages.enumerated() {
            let expected = numberedPayload(index, size: sizes[index])
            #expect(message.payload == expected, "message \(index)")
            #expect(message.subject == "arcus.test.\(index % 3)")
            if message.payload != expected { break }
        }
    }

    @Test("after cancel() returns, the handler never runs again")
    func cancelStopsDeliveries() async throws {
        let server = try NATSServerProcess.start(jetStream: false)
        let connection = try NATSConnection(testOptions(server.url))
        defer { connection.close() }
        let received = ReceivedMessages()
        let subscription = try connection.subscribe("arcus.cancel") { received.append($0) }
        try connection.publish("arcus.cancel", [1])
        try connection.flush(within: .seconds(10))
        #expect(await eventually { received.count == 1 })

        subscription.cancel()
        subscription.cancel()
        let countAtCancel = received.count
        for _ in 0..<100 { try connection.publish("arcus.cancel", [2]) }
        try connection.flush(within: .seconds(10))
        // A second subscription proves the messages were delivered to this client.
        let witness = ReceivedMessages()
        let witnessSubscription = try connection.subscribe("arcus.cancel") { witness.append($0) }
        defer { witnessSubscription.cancel() }
        try connection.flush(within: .seconds(10))
        try connection.publish("arcus.cancel", [3])
        try connection.flush(within: .seconds(10))
        #expect(await eventually { witness.count == 1 })
        #expect(received.count == countAtCancel)
    }

    @Test("close() ends events with .closed, and later calls throw a clear error")
    func closeIsFinal() async throws {
        let server = try NATSServerProcess.start(jetStream: false)
        let connection = try NATSConnection(testOptions(server.url))
        let received = ReceivedMessages()
        _ = try connection.subscribe("arcus.close") { received.append($0) }
        #expect(connection.isConnected)
        connection.close()
        connection.close()
        #expect(!connection.isConnected)
        var events: [NATSConnectionEvent] = []
        for await event in connection.events { events.append(event) }
        #expect(events.last == .closed)
        let error = #expect(throws: NATSError.self) { try connection.publish("arcus.close", [1]) }
        #expect(error?.description.contains("closed") == true)
    }
}

@Suite("NATS handle lifetimes", .timeLimit(.minutes(2)))
struct NATSLifetimeTests {
    @Test("cancelling subscriptions and closing connections while messages flow is safe")
    func cancelAndCloseUnderLoad() async throws {
        let server = try NATSServerProcess.start(jetStream: false)
        let publisher = try NATSConnection(testOptions(server.url))
        defer { publisher.close() }
        let flooding = Task.detached {
            var index = 0
            while !Task.isCancelled {
                try? publisher.publish("arcus.flood", numberedPayload(index, size: 256))
                index += 1
                if index % 500 == 0 { try? await Task.sleep(for: .milliseconds(1)) }
            }
        }
        defer { flooding.cancel() }

        for round in 0..<20 {
            let connection = try NATSConnection(testOptions(server.url))
            let received = ReceivedMessages()
            let subscriptions = try (0..<3).map { _ in
                try connection.subscribe("arcus.flood") { received.append($0) }
            }
            #expect(await eventually { received.count > 0 }, "round \(round)")
            subscriptions[0].cancel()
            if round % 2 == 0 { subscriptions[1].cancel() }
            connection.close()
            let countAtClose = received.count
            try await Task.sleep(for: .milliseconds(20))
            #expect(received.count == countAtClose, "round \(round): a handler ran after close()")
            subscriptions[2].cancel()
        }
    }
}

@Suite("NATS subjects", .timeLimit(.minutes(2)))
struct NATSSubjectTests {
    @Test("malformed subjects are refused with the reason, before reaching the server")
    func malformedSubjectsAreRefused() throws {
        let server = try NATSServerProcess.start(jetStream: false)
        let connection = try NATSConnection(testOptions(server.url))
        defer { connection.close() }
        for subject in ["", "two words", "a..b", ".a", "a.", "a.*", "a.>"] {
            let error = #expect(throws: NATSError.self, "\(subject)") { try connection.publish(subject, [1]) }
            #expect(error?.description.contains("subject") == true)
        }
        for subject in ["", "a b", "a.>.b"] {
            #expect(throws: NATSError.self, "\(subject)") { try connection.subscribe(subject) { _ in } }
        }
        let wildcard = try connection.subscribe("a.*.>") { _ in }
        wildcard.cancel()
    }
}

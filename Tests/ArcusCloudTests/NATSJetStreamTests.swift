import ArcusCloud
import ArcusTestSupport
import Testing

@Suite("NATS JetStream streams", .timeLimit(.minutes(2)))
struct NATSJetStreamTests {
    @Test("ensureStream creates the stream, and updates its limits when called again")
    func ensureStreamCreatesThenUpdates() throws {
        let server = try NATSServerProcess.start()
        let connection = try NATSConnection(testOptions(server.url))
        defer { connection.close() }
        var config = NATSStreamConfig(name: "RELAY", subjects: ["relay.>"], maxAge: .seconds(3_600), maxBytes: 1 << 20)
        try connection.ensureStream(config)
        #expect(try connection.streamState("RELAY").maxBytes == 1 << 20)

        config.maxBytes = 2 << 20
        config.subjects = ["relay.>", "extra.>"]
        try connection.ensureStream(config)
        #expect(try connection.streamState("RELAY").maxBytes == 2 << 20)
        #expect(try connection.publishPersisted("extra.one", [1]) == 1)

        try connection.deleteStream("RELAY")
        #expect(throws: NATSError.self) { try connection.streamState("RELAY") }
    }

    @Test("without JetStream on the server, ensureStream says to start nats-server with -js")
    func noJetStreamIsExplained() throws {
        let server = try NATSServerProcess.start(jetStream: false)
        let connection = try NATSConnection(testOptions(server.url))
        defer { connection.close() }
        let error = #expect(throws: NATSError.self) {
            try connection.ensureStream(NATSStreamConfig(name: "RELAY", subjects: ["relay.>"]))
        }
        let text = error?.description ?? ""
        #expect(text.contains("-js"), "\(text)")
        #expect(text.contains("RELAY"), "\(text)")
    }

    @Test("a small maxBytes drops the oldest messages; reading afterwards yields only the newest")
    func byteLimitDropsOldest() async throws {
        let server = try NATSServerProcess.start()
        let connection = try NATSConnection(testOptions(server.url))
        defer { connection.close() }
        try connection.ensureStream(NATSStreamConfig(name: "SMALL", subjects: ["small.>"], maxBytes: 16 * 1024))
        for index in 0..<200 {
            try connection.publishPersisted("small.data", numberedPayload(index, size: 500))
        }
        let state = try connection.streamState("SMALL")
        #expect(state.lastSequence == 200)
        #expect(state.messages < 200)
        #expect(state.firstSequence > 1)
        #expect(state.bytes <= 16 * 1024)

        let received = ReceivedMessages()
        let subscription = try connection.subscribeOrdered("small.>", startingAt: .all) { received.append($0) }
        defer { subscription.cancel() }
        #expect(await eventually { received.count >= Int(state.messages) })
        let indexes = received.all.compactMap { payloadIndex($0.payload) }
        #expect(indexes == Array(Int(state.firstSequence - 1)..<200))
        #expect(received.all.map(\.streamSequence) == Array(state.firstSequence...200).map { Optional($0) })
    }
}

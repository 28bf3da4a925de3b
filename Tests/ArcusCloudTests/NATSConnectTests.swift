import ArcusCloud
import ArcusTestSupport
import Testing

@Suite("NATS connecting", .timeLimit(.minutes(2)))
struct NATSConnectTests {
    @Test("a wrong password is refused with an error that says authorization and what to check")
    func wrongPasswordIsRefused() throws {
        let server = try NATSServerProcess.start(jetStream: false, extraArguments: ["--user", "arcus", "--pass", "secret"])
        var options = testOptions(server.url)
        options.retryOnFailedConnect = false
        options.user = "arcus"
        options.password = "wrong"
        let error = #expect(throws: NATSError.self) { try NATSConnection(options) }
        let text = error?.description.lowercased() ?? ""
        #expect(text.contains("authorization"), "\(text)")
        #expect(text.contains("password"), "\(text)")
        #expect(text.contains(server.url), "\(text)")
    }

    @Test("the right user and password connect, as options or in the URL")
    func rightPasswordConnects() throws {
        let server = try NATSServerProcess.start(jetStream: false, extraArguments: ["--user", "arcus", "--pass", "secret"])
        var options = testOptions(server.url)
        options.retryOnFailedConnect = false
        options.user = "arcus"
        options.password = "secret"
        let connection = try NATSConnection(options)
        defer { connection.close() }
        #expect(connection.isConnected)
        try connection.flush(within: .seconds(10))

        var inURL = testOptions("nats://arcus:secret@127.0.0.1:\(server.port)")
        inURL.retryOnFailedConnect = false
        let second = try NATSConnection(inURL)
        defer { second.close() }
        #expect(second.isConnected)
    }

    @Test("with nothing listening and no retry, the error names the URL")
    func nothingListeningFails() throws {
        let port = try freePort()
        var options = testOptions("nats://127.0.0.1:\(port)")
        options.retryOnFailedConnect = false
        let error = #expect(throws: NATSError.self) { try NATSConnection(options) }
        let text = error?.description ?? ""
        #expect(text.contains("nats://127.0.0.1:\(port)"), "\(text)")
        #expect(text.contains("nats-server"), "\(text)")
    }

    @Test("with retry, init returns at once and the connection comes up when a server starts")
    func retryConnectsLater() async throws {
        let port = try freePort()
        let connection = try NATSConnection(testOptions("nats://127.0.0.1:\(port)"))
        defer { connection.close() }
        let events = RecordedEvents(connection)
        #expect(!connection.isConnected)

        let server = try NATSServerProcess.start(jetStream: false, port: port)
        #expect(await eventually { connection.isConnected })
        #expect(await eventually { events.count(of: .reconnected) == 1 })
        let received = ReceivedMessages()
        let subscription = try connection.subscribe("arcus.late") { received.append($0) }
        defer { subscription.cancel() }
        try connection.publish("arcus.late", [42])
        try connection.flush(within: .seconds(10))
        #expect(await eventually { received.count == 1 })
        #expect(received.all.first?.payload == [42])
        _ = server
    }

    @Test("an empty URL list and half a client certificate are refused before connecting")
    func badOptionsAreRefused() {
        #expect(throws: NATSError.self) { try NATSConnection(NATSOptions(urls: [])) }
        var options = NATSOptions(urls: ["nats://127.0.0.1:1"])
        options.tls = NATSTLS(certificateFile: "/nonexistent/client.pem")
        #expect(throws: NATSError.self) { try NATSConnection(options) }
    }
}

@Suite("NATS closing", .timeLimit(.minutes(2)))
struct NATSClosingTests {
    @Test("a connection still waiting for its first server closes, and its events finish")
    func closesBeforeEverConnecting() async throws {
        let port = try freePort()
        let connection = try NATSConnection(testOptions("nats://127.0.0.1:\(port)"))
        let subscription = try connection.subscribe("arcus.never") { _ in }
        connection.close()
        subscription.cancel()
        var events: [NATSConnectionEvent] = []
        for await event in connection.events { events.append(event) }
        #expect(events.last == .closed)
        #expect(throws: NATSError.self) { try connection.publish("arcus.never", [1]) }
    }
}

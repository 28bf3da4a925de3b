import ArcusCloud
import ArcusTestSupport
import Testing

@Suite("NATS reconnecting", .timeLimit(.minutes(2)))
struct NATSReconnectTests {
    @Test("a server restart reports .disconnected then .reconnected; buffered publishes arrive")
    func serverRestart() async throws {
        let server = try NATSServerProcess.start(jetStream: false)
        let connection = try NATSConnection(testOptions(server.url))
        defer { connection.close() }
        let events = RecordedEvents(connection)
        let received = ReceivedMessages()
        let subscription = try connection.subscribe("arcus.restart") { received.append($0) }
        defer { subscription.cancel() }
        try connection.publish("arcus.restart", numberedPayload(0, size: 8))
        try connection.flush(within: .seconds(10))
        #expect(await eventually { received.count == 1 })

        server.stop()
        #expect(await eventually { events.count(of: .disconnected) >= 1 })
        #expect(!connection.isConnected)
        // Buffered by libnats while reconnecting; sent once connected again.
        for index in 1...20 {
            try connection.publish("arcus.restart", numberedPayload(index, size: 100))
        }

        try server.restart()
        #expect(await eventually { events.count(of: .reconnected) >= 1 })
        let disconnected = events.all.firstIndex(of: .disconnected)
        let reconnected = events.all.firstIndex(of: .reconnected)
        #expect(disconnected != nil && reconnected != nil && disconnected! < reconnected!)

        try connection.publish("arcus.restart", numberedPayload(21, size: 8))
        try connection.flush(within: .seconds(10))
        #expect(await eventually { received.count >= 22 })
        #expect(received.all.compactMap { payloadIndex($0.payload) } == Array(0...21))
    }
}

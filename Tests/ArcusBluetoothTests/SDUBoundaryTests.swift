import ArcusBluetooth
import ArcusMesh
import ArcusTestSupport
import ArcusTransportConformance
import Testing

/// SEQPACKET keeps message boundaries only if every message is its own send(): a writer that
/// gathered queued messages into one writev (as a SwiftNIO channel does under backpressure)
/// would deliver two SDUs as one. These send back to back against a reader that lags.
@Suite("SDU boundaries on emulated links", .timeLimit(.minutes(2)))
struct SDUBoundaryTests {
    @Test("1,000 messages of random sizes up to the MTU, sent back to back, arrive as exactly those messages",
          arguments: [nil, EmulatedPHY(bitsPerSecond: 200_000_000, connectionInterval: .milliseconds(1))])
    func boundariesHold(phy: EmulatedPHY?) async throws {
        for seed in SeededRandom.seeds(count: 2, test: "SDU boundaries") {
            print("SDU boundaries (\(phy?.description ?? "unpaced")): seed \(seed)")
            var random = SeededRandom(seed: seed)
            let (a, b) = try EmulatedLinkPair.make(phy: phy)
            defer { a.close() }
            let messages = (0..<1_000).map { index in
                testMessage(index, size: Int(random.next() % UInt64(a.mtu)) + 1)
            }
            let sending = Task {
                for message in messages { try await a.send(message) }
            }
            // Start reading only once the sender has filled the socket, so sends queue up.
            try await Task.sleep(for: .milliseconds(50))
            let received = try await b.incoming.next(messages.count, within: .seconds(60))
            try await sending.value
            #expect(received.count == messages.count)
            #expect(received.map(\.count) == messages.map(\.count), "message boundaries moved")
            #expect(received == messages)
        }
    }

    @Test("an empty message is delivered as an empty message, not as the end of the link")
    func emptyMessage() async throws {
        let (a, b) = try EmulatedLinkPair.make()
        defer { a.close() }
        try await a.send([])
        try await a.send([1])
        #expect(try await b.incoming.next(2, within: .seconds(30)) == [[], [1]])
        try await b.send([2])
        #expect(try await a.incoming.next(1, within: .seconds(30)) == [[2]])
    }
}

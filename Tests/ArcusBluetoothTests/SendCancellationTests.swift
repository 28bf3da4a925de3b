import ArcusBluetooth
import ArcusMesh
import ArcusTransportConformance
import Testing

/// The Link contract's cancellation: a send suspended on a full link that is cancelled throws
/// CancellationError and its message is never sent; the link carries on.
@Suite("Send cancellation on emulated links", .timeLimit(.minutes(2)))
struct SendCancellationTests {
    @Test("a cancelled suspended send throws CancellationError and its message never arrives",
          arguments: [nil, EmulatedPHY(bitsPerSecond: 200_000_000, connectionInterval: .milliseconds(1))])
    func cancelledSend(phy: EmulatedPHY?) async throws {
        let (a, b) = try EmulatedLinkPair.make(phy: phy)
        defer { a.close() }
        // Fill the link until a send stays suspended.
        let producer = Producer(link: a, messageSize: a.mtu, count: EmulatedLinkPair.bufferLimit(phy: phy) / a.mtu * 4 + 16)
        let filling = Task { try await producer.run() }
        let settled = try await producer.progress.settled(limit: .seconds(45)) { producer.isDone }
        _ = try #require(settled, "the link never filled up")
        filling.cancel()
        await #expect(throws: CancellationError.self) { try await filling.value }
        let sent = producer.progress.value

        // What arrives is exactly what `send` returned for, then the link still works.
        async let received = b.incoming.next(sent + 1, within: .seconds(45))
        try await within(.seconds(45), "sending after the cancelled send") { try await a.send([0xCC]) }
        let arrived = try await received
        #expect(Array(arrived.prefix(sent)) == (0..<sent).map(producer.message))
        #expect(arrived.last == [0xCC], "the cancelled message, or one after it, was sent")
    }
}

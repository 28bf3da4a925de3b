import ArcusLoopback
import ArcusMesh
import ArcusTransportConformance
import Testing

/// A session without a link keeps messages (up to its window) and resumes when one comes; a
/// consumer that stops reading stops the sender at the window.
@Suite("Session buffering and backpressure", .serialized, .timeLimit(.minutes(1)))
struct SessionBufferingTests {
    static var smallWindow: SessionConfiguration {
        var configuration = SessionTestPeers.quickConfiguration
        configuration.window = 8
        return configuration
    }

    @Test("with no link, sends fill the window and then wait; a new link delivers them all in order")
    func buffersWithoutALink() async throws {
        let peers = SessionTestPeers(configuration: Self.smallWindow)
        let sender = await peers.alphaSession
        for index in 0..<8 { try await sender.send(numberedMessage(index, padding: 10)) }
        let sent = Progress()
        let blocked = Task {
            for index in 8..<12 {
                try await sender.send(numberedMessage(index, padding: 10))
                sent.advance()
            }
        }
        try await Task.sleep(for: .milliseconds(100))
        #expect(sent.value == 0, "a send went past a full window with no link")
        #expect(await sender.unacknowledgedMessages.count == 8)

        try await peers.link(.ble.accelerated(by: 10), kind: .bluetooth)
        let receiver = await peers.bravoSession
        let received = try await receiver.incoming.next(12)
        #expect(received.map(index(ofNumbered:)) == Array(0..<12))
        try await blocked.value
        await peers.close()
    }

    @Test("when the last link goes, the session and the multiplexer ask for one; then traffic resumes on the next")
    func needsLink() async throws {
        let peers = SessionTestPeers()
        let first = try await peers.link(.instant, kind: .lan)
        let sender = await peers.alphaSession, receiver = await peers.bravoSession
        var events = peers.alpha.events.makeAsyncIterator()
        first.alpha.close()
        var asked = false
        while let event = await events.next() {
            if case .needsLink(let peer) = event {
                #expect(peer == .bravo)
                asked = true
                break
            }
        }
        #expect(asked)
        try await sender.send([7])
        try await peers.link(.instant, kind: .bluetooth)
        #expect(try await receiver.incoming.next(1) == [[7]])
        await peers.close()
    }

    @Test("a consumer that stops reading holds the sender at the window: memory stays bounded")
    func backpressure() async throws {
        let peers = SessionTestPeers(configuration: Self.smallWindow)
        try await peers.link(.instant, kind: .lan)
        let sender = await peers.alphaSession, receiver = await peers.bravoSession
        let sent = Progress()
        let producer = Task {
            for index in 0..<100 {
                try await sender.send(numberedMessage(index, padding: 1000))
                sent.advance()
            }
        }
        let stalledAt = try await sent.settled { false }
        #expect(stalledAt == 8, "the sender stops at the window of 8 while nobody reads")
        let outstanding = await sender.unacknowledgedMessages
        #expect(outstanding.count <= 8 && outstanding.bytes <= 8 * 1008)

        let received = try await receiver.incoming.next(100)
        #expect(received.map(index(ofNumbered:)) == Array(0..<100))
        try await producer.value
        await peers.close()
    }

    @Test("a message over the session's maximum is refused before it is queued")
    func oversizeMessage() async throws {
        let peers = SessionTestPeers()
        let sender = await peers.alphaSession
        await #expect(throws: LinkError.self) { try await sender.send([UInt8](repeating: 0, count: sender.configuration.maximumMessageSize + 1)) }
        await peers.close()
    }

    @Test("flush waits until what was sent is on a link, not for its acknowledgement; with no link it gives up at the deadline")
    func flushPutsSentMessagesOnALink() async throws {
        let peers = SessionTestPeers()
        let sender = await peers.alphaSession
        for index in 0..<3 { try await sender.send(numberedMessage(index, padding: 10)) }
        #expect(await !sender.flush(until: .now + .milliseconds(300)), "flushed with no link to put the messages on")

        let link = try await peers.severableLink(.instant, kind: .lan)
        #expect(await sender.flush(until: .now + .seconds(30)))
        let receiver = await peers.bravoSession
        #expect(try await receiver.incoming.next(3).map(index(ofNumbered:)) == Array(0..<3))

        // A link gone silent still takes what is put on it: flushed, though never acknowledged.
        try await eventually("the first three acknowledged") { await sender.unacknowledgedMessages.count == 0 }
        link.alpha.sever()
        for index in 3..<5 { try await sender.send(numberedMessage(index, padding: 10)) }
        #expect(await sender.flush(until: .now + .seconds(30)))
        #expect(await sender.unacknowledgedMessages.count == 2)
        await peers.close()
    }
}

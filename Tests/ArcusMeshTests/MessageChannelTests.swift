import ArcusLoopback
import ArcusMesh
import ArcusTransportConformance
import Testing

@Suite("Message channel", .timeLimit(.minutes(2)))
struct MessageChannelTests {
    /// A link with a large MTU, and one with BLE's small MTU and no delay, so that a megabyte
    /// goes through thousands of fragments quickly.
    static let links: [LoopbackConditions] = [.instant, LoopbackConditions(mtu: 244, queueLimitBytes: 8 << 10)]

    @Test("messages of 0, 1, mtu - 1, mtu, 10 × mtu bytes and 1 MiB arrive whole and in order", arguments: links)
    func roundTrip(_ conditions: LoopbackConditions) async throws {
        let (a, b) = Loopback.pair(conditions)
        let sender = MessageChannel(a), receiver = MessageChannel(b)
        defer { sender.close() }
        let mtu = conditions.mtu
        let sizes = [0, 1, mtu - 2, mtu - 1, mtu, mtu + 1, 10 * mtu, 1 << 20, 0, 3]
        let messages = sizes.enumerated().map { testMessage($0, size: $1) }

        async let received = receiver.incoming.next(messages.count, within: .seconds(45))
        for message in messages { try await sender.send(message) }
        #expect(try await received == messages)
    }

    @Test("a message of up to fragmentPayload bytes is one fragment; a longer one costs a byte per fragment and its length once")
    func overhead() async throws {
        let (a, b) = Loopback.pair(LoopbackConditions(mtu: 100))
        let sender = MessageChannel(a), receiver = MessageChannel(b)
        defer { sender.close() }
        #expect(sender.fragmentPayload == 99)

        // Size, fragments, bytes on the link: 99 in one; 100 as 1 + 1 (length) + 98, then 1 + 2;
        // 1000 as 1 + 2 (length) + 97, then ten more fragments.
        for (size, fragments, linkBytes) in [(99, 1, 100), (100, 2, 103), (1000, 11, 1013)] {
            let before = a.statistics
            let message = testMessage(size, size: size)
            try await sender.send(message)
            #expect(try await receiver.incoming.next(1) == [message])
            #expect(a.statistics.messagesSent - before.messagesSent == fragments, "\(size) bytes")
            #expect(a.statistics.bytesSent - before.bytesSent == linkBytes, "\(size) bytes")
        }
    }

    @Test("a message over maximumMessageSize is refused before any of it is sent")
    func oversizeSend() async throws {
        let (a, b) = Loopback.pair(LoopbackConditions(mtu: 100))
        let sender = MessageChannel(a, maximumMessageSize: 1000), receiver = MessageChannel(b, maximumMessageSize: 1000)
        defer { sender.close() }
        #expect(sender.mtu == 1000)

        await #expect(throws: LinkError.messageTooLarge(size: 1001, mtu: 1000)) {
            try await sender.send(testMessage(0, size: 1001))
        }
        #expect(a.statistics.messagesSent == 0)
        let fitting = testMessage(1, size: 1000)
        try await sender.send(fitting)
        #expect(try await receiver.incoming.next(1) == [fitting])
    }

    @Test("a peer announcing a message over the limit is refused at its first fragment")
    func oversizeAnnouncement() async throws {
        let (peer, b) = Loopback.pair(LoopbackConditions(mtu: 100))
        let receiver = MessageChannel(b, maximumMessageSize: 1000)
        // A terabyte: were it buffered, the test would not survive.
        var first: [UInt8] = [0b11]
        appendLength(1 << 40, to: &first)
        try await peer.send(first + [1, 2, 3])

        #expect(try await receiver.incoming.remaining().isEmpty)
        #expect(receiver.peerViolation == .messageTooLarge(announced: 1 << 40, limit: 1000))
        #expect(peer.isClosed)
    }

    struct MalformedInput: Sendable, CustomTestStringConvertible {
        let testDescription: String
        let fragments: [[UInt8]]
        let violation: FragmentationError
    }

    /// Each case follows a valid message, [0x01, 42], and uses a channel with a 64-byte limit.
    static let malformedInputs: [MalformedInput] = [
        MalformedInput(testDescription: "an empty link message", fragments: [[]], violation: .emptyFragment),
        MalformedInput(testDescription: "unknown flags", fragments: [[0x04, 1]], violation: .unknownFlags(header: 0x04)),
        MalformedInput(testDescription: "a middle fragment first", fragments: [[0x02, 1, 2]], violation: .continuationWithoutStart),
        MalformedInput(testDescription: "a last fragment first", fragments: [[0x00, 1]], violation: .continuationWithoutStart),
        MalformedInput(
            testDescription: "a new message before the last ended", fragments: [[0x03, 10, 1, 2, 3], [0x01, 9]],
            violation: .interruptedMessage(expected: 10, received: 3)
        ),
        MalformedInput(testDescription: "a length cut short", fragments: [[0x03, 0x80]], violation: .malformedLength),
        MalformedInput(
            testDescription: "a length beyond 64 bits", fragments: [[0x03] + Array(repeating: 0xFF, count: 10) + [0x01]],
            violation: .malformedLength
        ),
        MalformedInput(
            testDescription: "a whole message over the limit", fragments: [[0x01] + Array(repeating: 7, count: 65)],
            violation: .messageTooLarge(announced: 65, limit: 64)
        ),
        MalformedInput(
            testDescription: "a first fragment that holds all it announced", fragments: [[0x03, 3, 1, 2, 3]],
            violation: .lengthMismatch(expected: 3, received: 3)
        ),
        MalformedInput(
            testDescription: "more bytes than announced", fragments: [[0x03, 5, 1, 2, 3], [0x00, 4, 5, 6]],
            violation: .lengthMismatch(expected: 5, received: 6)
        ),
        MalformedInput(
            testDescription: "fewer bytes than announced", fragments: [[0x03, 5, 1, 2], [0x00, 3]],
            violation: .lengthMismatch(expected: 5, received: 3)
        ),
        MalformedInput(
            testDescription: "a middle fragment that reaches the end", fragments: [[0x03, 5, 1, 2], [0x02, 3, 4, 5]],
            violation: .lengthMismatch(expected: 5, received: 5)
        ),
        MalformedInput(testDescription: "an empty middle fragment", fragments: [[0x03, 5, 1, 2], [0x02]], violation: .emptyContinuation),
    ]

    @Test("malformed fragments close the link and finish the stream after the messages before them", arguments: malformedInputs)
    func malformedInput(_ input: MalformedInput) async throws {
        let (peer, b) = Loopback.pair(LoopbackConditions(mtu: 100))
        let receiver = MessageChannel(b, maximumMessageSize: 64)
        try await peer.send([0x01, 42])
        for fragment in input.fragments { try await peer.send(fragment) }

        #expect(try await receiver.incoming.remaining() == [[42]])
        #expect(receiver.peerViolation == input.violation)
        #expect(peer.isClosed)
        await #expect(throws: LinkError.closed) { try await receiver.send([1]) }
    }

    @Test("concurrent senders' messages never interleave, and each sender's stay in order")
    func concurrentSenders() async throws {
        // A small MTU and queue, so that senders suspend in the middle of their messages.
        let (a, b) = Loopback.pair(LoopbackConditions(mtu: 100, queueLimitBytes: 1000))
        let sender = MessageChannel(a), receiver = MessageChannel(b)
        defer { sender.close() }
        let senders = 8, perSender = 25
        @Sendable func message(sender: Int, index: Int) -> [UInt8] {
            [UInt8(sender), UInt8(index)] + testMessage(sender * 1000 + index, size: 250 + index * 7)
        }

        // Senders and receiver under one limit, in one group: when receiving fails (or runs out
        // of time on a loaded machine), the senders, stuck on a full link, are cancelled with it
        // rather than left waiting for a reader that has gone.
        let received = try await within(.seconds(60), "\(senders) senders sending \(perSender) messages each") {
            try await withThrowingTaskGroup(of: [[UInt8]].self) { group in
                group.addTask { try await receiver.incoming.next(senders * perSender, within: .seconds(60)) }
                for senderIndex in 0..<senders {
                    group.addTask {
                        for index in 0..<perSender { try await sender.send(message(sender: senderIndex, index: index)) }
                        return []
                    }
                }
                var received: [[UInt8]] = []
                for try await messages in group where !messages.isEmpty { received = messages }
                return received
            }
        }
        #expect(received.count == senders * perSender)
        let bySender = Dictionary(grouping: received, by: { Int($0[0]) })
        for senderIndex in 0..<senders {
            #expect(bySender[senderIndex] == (0..<perSender).map { message(sender: senderIndex, index: $0) })
        }
    }

    @Test("a send cancelled after part of its message went out closes the link rather than corrupt the stream")
    func cancelledMidMessage() async throws {
        let (a, b) = Loopback.pair(LoopbackConditions(mtu: 100, queueLimitBytes: 300))
        let sender = MessageChannel(a), receiver = MessageChannel(b)
        let sending = Task { try await sender.send(testMessage(0, size: 2000)) }
        // Three fragments fill the queue; the fourth waits.
        try await within(.seconds(5), "the first fragments") {
            while a.statistics.messagesSent < 3 { try await Task.sleep(for: .milliseconds(1)) }
        }
        sending.cancel()
        await #expect(throws: CancellationError.self) { try await sending.value }

        #expect(a.isClosed)
        #expect(try await receiver.incoming.remaining().isEmpty)
        #expect(receiver.peerViolation == nil)
    }

    @Test("a consumer that stops reading holds the sender back through the link")
    func endToEndBackpressure() async throws {
        let (a, b) = Loopback.pair(LoopbackConditions(mtu: 100, queueLimitBytes: 1000))
        let sender = MessageChannel(a), receiver = MessageChannel(b)
        defer { sender.close() }
        let producer = Producer(link: sender, messageSize: 1000, count: 50)
        let task = Task { try await producer.run() }

        let settled = try await producer.progress.settled { producer.isDone }
        let sent = try #require(settled, "sends never suspended: all \(producer.count) messages went out unread")
        #expect(sent <= 1, "\(sent) messages of 1000 bytes went out unread; the link holds 1000 bytes")
        #expect(a.bytesInFlight <= 1000)
        #expect(try await receiver.incoming.next(producer.count) == (0..<producer.count).map(producer.message))
        try await task.value
    }

    private func appendLength(_ length: Int, to bytes: inout [UInt8]) {
        var rest = length
        while rest >= 0x80 {
            bytes.append(UInt8(rest & 0x7F) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }
}

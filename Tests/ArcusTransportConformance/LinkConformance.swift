import ArcusMesh
import Testing

/// What every `Link` must do, whatever carries it. A transport is done when its links pass
/// these checks: its tests describe how to make a connected pair and how to make one end
/// vanish, and run each check as a test (see LinkConformanceTests).
///
/// The checks need a reliable link (no loss) and never depend on the machine's speed: each step
/// has a generous time limit only so that a broken link fails instead of hanging.
public struct LinkConformance: Sendable, CustomTestStringConvertible {
    /// What the transport is, in test reports.
    public let name: String
    /// Makes two links connected to each other, open.
    public let makePair: @Sendable () async throws -> (any Link, any Link)
    /// Makes a link fail abruptly, as when its radio goes out of range or its process dies.
    public let sever: @Sendable (any Link) -> Void
    /// The most bytes of messages a direction holds, sent but not yet read, before `send`
    /// suspends.
    public let bufferLimit: Int
    /// The longest any one step may take.
    public var stepLimit: Duration
    /// The most pairs the carrier holds open at once, where it has a limit of its own (one LE
    /// connection between two controllers has 64 dynamic channel ids); nil for none.
    public var simultaneousPairs: Int?

    public init(
        name: String, makePair: @escaping @Sendable () async throws -> (any Link, any Link),
        sever: @escaping @Sendable (any Link) -> Void, bufferLimit: Int, stepLimit: Duration = .seconds(45), simultaneousPairs: Int? = nil
    ) {
        self.simultaneousPairs = simultaneousPairs
        self.name = name
        self.makePair = makePair
        self.sever = sever
        self.bufferLimit = bufferLimit
        self.stepLimit = stepLimit
    }

    public var testDescription: String { name }

    // MARK: Delivery

    /// Messages of many sizes up to the MTU arrive whole and in order, in both directions at once.
    public func checkDeliversInOrderBothWays() async throws {
        let (a, b) = try await makePair()
        defer { a.close() }
        #expect(a.mtu > 0 && b.mtu > 0)
        #expect(!a.description.isEmpty && !b.description.isEmpty)

        let fromA = Self.messages(count: 28, mtu: a.mtu, seed: 0)
        let fromB = Self.messages(count: 28, mtu: b.mtu, seed: 1_000)
        async let sendingA: Void = send(fromA, on: a)
        async let sendingB: Void = send(fromB, on: b)
        async let atB = b.incoming.next(fromA.count, within: stepLimit)
        async let atA = a.incoming.next(fromB.count, within: stepLimit)
        try await sendingA
        try await sendingB
        #expect(try await atB == fromA)
        #expect(try await atA == fromB)
    }

    /// A message of `mtu - 1` or `mtu` bytes goes through; one of `mtu + 1` is refused without
    /// harm to the link.
    public func checkMessagesAroundTheMTU() async throws {
        let (a, b) = try await makePair()
        defer { a.close() }
        for (sender, receiver) in [(a, b), (b, a)] {
            let mtu = sender.mtu
            let fitting = [testMessage(1, size: mtu - 1), testMessage(2, size: mtu)]
            let after = testMessage(4, size: 1)
            // Read while sending: two messages of the MTU need not fit the link's buffer at once.
            async let received = receiver.incoming.next(3, within: stepLimit)
            try await send(fitting, on: sender)
            await #expect(throws: LinkError.messageTooLarge(size: mtu + 1, mtu: mtu)) {
                try await sender.send(testMessage(3, size: mtu + 1))
            }
            try await sender.send(after)
            #expect(try await received == fitting + [after])
        }
    }

    // MARK: Closing

    /// Closing either end finishes both streams, fails later sends on both ends, and may be
    /// repeated.
    public func checkCloseFromEitherEnd() async throws {
        for closingA in [true, false] {
            let (a, b) = try await makePair()
            let (closing, other) = closingA ? (a, b) : (b, a)
            try await closing.send([7])
            #expect(try await other.incoming.next(1, within: stepLimit) == [[7]])

            closing.close()
            #expect(try await closing.incoming.remaining(within: stepLimit).isEmpty)
            #expect(try await other.incoming.remaining(within: stepLimit).isEmpty)
            for link in [closing, other] {
                await #expect(throws: LinkError.closed) { try await link.send([8]) }
            }
            closing.close()
            other.close()
        }
    }

    /// A send suspended because the link is full fails with `LinkError.closed` when the peer
    /// closes.
    public func checkCloseFailsSuspendedSends() async throws {
        let (a, b) = try await makePair()
        defer { a.close() }
        let producer = Producer(link: a, messageSize: min(a.mtu, 1024), count: bufferLimit / min(a.mtu, 1024) * 4 + 16)
        let task = Task { try await producer.run() }
        let settled = try await producer.progress.settled(limit: stepLimit) { producer.isDone }
        #expect(settled != nil, "sends never suspended: \(producer.progress.value) of \(producer.count) went out")
        b.close()
        await #expect(throws: LinkError.closed) { try await within(stepLimit, "the suspended send") { try await task.value } }
    }

    /// When either end vanishes while messages are in flight, the other end's pending send fails,
    /// both streams finish, and what did arrive is a whole, ordered prefix of what was sent.
    public func checkPeerVanishingMidStream() async throws {
        for severReceiver in [true, false] {
            let (a, b) = try await makePair()
            let producer = Producer(link: a, messageSize: min(a.mtu, 1024), count: bufferLimit / min(a.mtu, 1024) * 4 + 16)
            let task = Task { try await producer.run() }
            let early = try await b.incoming.next(5, within: stepLimit)
            #expect(early == (0..<5).map(producer.message))

            sever(severReceiver ? b : a)
            let late = try await b.incoming.remaining(within: stepLimit)
            #expect(late == (5..<(5 + late.count)).map(producer.message), "messages after the cut arrived out of order or damaged")
            #expect(try await a.incoming.remaining(within: stepLimit).isEmpty)
            await #expect(throws: LinkError.closed) { try await within(stepLimit, "the producer") { try await task.value } }
            await #expect(throws: LinkError.closed) { try await b.send([1]) }
        }
    }

    // MARK: Load

    /// A producer faster than its consumer is held back: its sends suspend once `bufferLimit`
    /// bytes are in flight, and resume, losing nothing, as the consumer catches up.
    public func checkBackpressure() async throws {
        let (a, b) = try await makePair()
        defer { a.close() }
        let size = min(a.mtu, 1024)
        let producer = Producer(link: a, messageSize: size, count: bufferLimit / size * 4 + 16)
        let task = Task { try await producer.run() }

        let settled = try await producer.progress.settled(limit: stepLimit) { producer.isDone }
        let sent = try #require(settled, "sends never suspended: all \(producer.count) messages went out unread")
        #expect(sent * size <= bufferLimit, "\(sent * size) bytes went out unread; the link holds \(bufferLimit)")

        let received = try await b.incoming.next(producer.count, within: stepLimit)
        #expect(received == (0..<producer.count).map(producer.message))
        try await within(stepLimit, "the producer") { try await task.value }
    }

    /// Hundreds of pairs work at once (or as many as the carrier holds), each delivering its own messages.
    public func checkManyLinksAtOnce(pairs: Int = 200) async throws {
        let pairs = min(pairs, simultaneousPairs ?? pairs)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for pair in 0..<pairs {
                group.addTask {
                    let (a, b) = try await makePair()
                    defer { a.close() }
                    let fromA = (0..<4).map { testMessage(pair * 8 + $0, size: min(a.mtu, 100 + $0)) }
                    let fromB = (4..<8).map { testMessage(pair * 8 + $0, size: min(b.mtu, 100 + $0)) }
                    async let sendingA: Void = send(fromA, on: a)
                    async let sendingB: Void = send(fromB, on: b)
                    async let atB = b.incoming.next(4, within: stepLimit)
                    async let atA = a.incoming.next(4, within: stepLimit)
                    try await sendingA
                    try await sendingB
                    #expect(try await atB == fromA)
                    #expect(try await atA == fromB)
                }
            }
            try await group.waitForAll()
        }
    }

    // MARK: Helpers

    /// `count` messages whose sizes run through the edges of `mtu`: 1 byte, the MTU, and between.
    public static func messages(count: Int, mtu: Int, seed: Int) -> [[UInt8]] {
        let sizes = [1, mtu, 2, mtu - 1, mtu / 2, 3, mtu / 3 + 1].map { max(1, $0) }
        return (0..<count).map { testMessage(seed + $0, size: sizes[$0 % sizes.count]) }
    }

    private func send(_ messages: [[UInt8]], on link: any Link) async throws {
        try await within(stepLimit, "sending \(messages.count) messages on \(link.description)") {
            for message in messages { try await link.send(message) }
        }
    }
}

/// Sends numbered messages as fast as the link takes them, counting those that went out.
public struct Producer: Sendable {
    public let link: any Link
    public let messageSize: Int
    public let count: Int
    public let progress = Progress()

    public init(link: any Link, messageSize: Int, count: Int) {
        self.link = link
        self.messageSize = messageSize
        self.count = count
    }

    public var isDone: Bool { progress.value == count }

    public func message(_ index: Int) -> [UInt8] { testMessage(index, size: messageSize) }

    public func run() async throws {
        for index in 0..<count {
            try await link.send(message(index))
            progress.advance()
        }
    }
}

import ArcusMesh
import Testing

/// What every `Transport` must do, whatever its medium: the one suite each transport runs, as
/// automerge-repo's adapters all run its network-adapter tests. A transport's tests describe how
/// to make transports of its kind that can reach each other (and, if it can, how to move two out
/// of reach), and run each check as a test (see TransportConformanceTests).
///
/// The links a transport opens and accepts must also pass the link checks: `links` runs them on
/// pairs made by dialling. Time limits are generous, only so that a broken transport fails
/// instead of hanging; nothing asserts speed.
public struct TransportConformance: Sendable, CustomTestStringConvertible {
    /// What the transport is, in test reports.
    public let name: String
    /// Makes `count` transports of one kind, not started, each in reach of every other.
    public let makeTransports: @Sendable (_ count: Int) async throws -> TransportFixture
    /// Makes a link fail abruptly, as when its radio goes out of range or its process dies.
    public let sever: @Sendable (any Link) -> Void
    /// The most bytes of messages a link's direction holds, sent but not yet read.
    public let bufferLimit: Int
    /// An address of the transport's kind at which no peer is, nor ever was.
    public let unknownAddress: String
    /// The longest any one step may take.
    public var stepLimit: Duration

    public init(
        name: String, makeTransports: @escaping @Sendable (_ count: Int) async throws -> TransportFixture,
        sever: @escaping @Sendable (any Link) -> Void, bufferLimit: Int, unknownAddress: String,
        stepLimit: Duration = .seconds(45)
    ) {
        self.name = name
        self.makeTransports = makeTransports
        self.sever = sever
        self.bufferLimit = bufferLimit
        self.unknownAddress = unknownAddress
        self.stepLimit = stepLimit
    }

    public var testDescription: String { name }

    /// The link checks, on links this transport opens and accepts.
    public var links: LinkConformance {
        LinkConformance(name: "links of \(name)", makePair: { try await openPair() }, sever: sever, bufferLimit: bufferLimit, stepLimit: stepLimit)
    }

    // MARK: Discovery

    /// Started transports announce each other, and `reachablePeers` agrees.
    public func checkDiscovery() async throws {
        let peers = try await running(3)
        defer { Task { await peers.stop() } }
        for (index, transport) in peers.transports.enumerated() {
            let others = peers.transports.indices.filter { $0 != index }.map { peers.transports[$0].localEndpoint }
            for other in others { try await peers.logs[index].appeared(other, within: stepLimit) }
            #expect(Set(await transport.reachablePeers) == Set(others))
            #expect(transport.localEndpoint.kind == transport.kind)
        }
    }

    /// A peer that moves out of reach is lost on both sides and comes back when it returns; links
    /// between the two end when they part.
    public func checkReachabilityChanges() async throws {
        let peers = try await running(2)
        defer { Task { await peers.stop() } }
        guard let setReachable = peers.setReachable else { return }
        let (a, b) = (peers.transports[0], peers.transports[1])
        try await peers.logs[0].appeared(b.localEndpoint, within: stepLimit)
        try await peers.logs[1].appeared(a.localEndpoint, within: stepLimit)
        let opened = try await a.open(to: b.localEndpoint)
        let accepted = try await peers.logs[1].accepted(from: a.localEndpoint, within: stepLimit)

        await setReachable(0, 1, false)
        try await peers.logs[0].lost(b.localEndpoint, within: stepLimit)
        try await peers.logs[1].lost(a.localEndpoint, within: stepLimit)
        #expect(await a.reachablePeers.isEmpty)
        #expect(await b.reachablePeers.isEmpty)
        #expect(try await opened.incoming.remaining(within: stepLimit).isEmpty)
        #expect(try await accepted.incoming.remaining(within: stepLimit).isEmpty)
        await #expect(throws: TransportError.self) { _ = try await a.open(to: b.localEndpoint) }

        await setReachable(0, 1, true)
        try await peers.logs[0].appeared(b.localEndpoint, within: stepLimit)
        try await peers.logs[1].appeared(a.localEndpoint, within: stepLimit)
        #expect(await a.reachablePeers == [b.localEndpoint])
    }

    /// A transport that stops is lost by its peers, its events finish, and it cannot dial.
    public func checkStopIsSeenByPeers() async throws {
        let peers = try await running(2)
        defer { Task { await peers.stop() } }
        let (a, b) = (peers.transports[0], peers.transports[1])
        try await peers.logs[0].appeared(b.localEndpoint, within: stepLimit)

        await b.stop()
        try await peers.logs[0].lost(b.localEndpoint, within: stepLimit)
        try await peers.logs[1].finished(within: stepLimit)
        #expect(await a.reachablePeers.isEmpty)
        await #expect(throws: TransportError.self) { _ = try await b.open(to: a.localEndpoint) }
        await b.stop()
    }

    // MARK: Opening

    /// A dial gives a link whose other end the peer accepts, announced with the dialler's endpoint;
    /// the two ends are connected to each other, both ways.
    public func checkOpenIsAccepted() async throws {
        let peers = try await running(2)
        defer { Task { await peers.stop() } }
        let (a, b) = (peers.transports[0], peers.transports[1])
        let opened = try await within(stepLimit, "dialling") { try await a.open(to: b.localEndpoint) }
        let accepted = try await peers.logs[1].accepted(from: a.localEndpoint, within: stepLimit)
        #expect(opened.kind == a.kind && accepted.kind == b.kind)
        #expect(opened.metrics.cost == accepted.metrics.cost)

        try await opened.send([1, 2, 3])
        try await accepted.send([4])
        #expect(try await accepted.incoming.next(1, within: stepLimit) == [[1, 2, 3]])
        #expect(try await opened.incoming.next(1, within: stepLimit) == [[4]])
        opened.close()
    }

    /// Dialling what cannot answer fails with a `TransportError`, well before any failure-detection
    /// timeout: an unknown address, a stopped peer, a peer out of reach, and a dialler not running.
    public func checkUnreachableDialsFail() async throws {
        let peers = try await running(3)
        defer { Task { await peers.stop() } }
        let (a, b, c) = (peers.transports[0], peers.transports[1], peers.transports[2])
        try await peers.logs[0].appeared(b.localEndpoint, within: stepLimit)

        let unknown = TransportEndpoint(kind: a.kind, address: unknownAddress)
        await #expect(throws: TransportError.self) { try await dialFailing(a, to: unknown) }

        await c.stop()
        try await peers.logs[0].lost(c.localEndpoint, within: stepLimit)
        await #expect(throws: TransportError.self) { try await dialFailing(a, to: c.localEndpoint) }
        await #expect(throws: TransportError.self) { try await dialFailing(c, to: a.localEndpoint) }

        if let setReachable = peers.setReachable {
            await setReachable(0, 1, false)
            await #expect(throws: TransportError.self) { try await dialFailing(a, to: b.localEndpoint) }
        }

        let idle = try await makeTransports(1).transports[0]
        await #expect(throws: TransportError.self) { try await dialFailing(idle, to: a.localEndpoint) }
    }

    /// Many links opened at once between the same two peers each reach the peer and keep their
    /// own messages apart.
    public func checkManyDialsAtOnce(_ count: Int = 20) async throws {
        let peers = try await running(2)
        defer { Task { await peers.stop() } }
        let (a, b) = (peers.transports[0], peers.transports[1])
        try await peers.logs[0].appeared(b.localEndpoint, within: stepLimit)

        let log = peers.logs[1]
        let limit = stepLimit
        try await withThrowingTaskGroup(of: Void.self) { group in
            for number in 0..<count {
                group.addTask {
                    let link = try await a.open(to: b.localEndpoint)
                    defer { link.close() }
                    let hello = testMessage(number, size: min(link.mtu, 64 + number))
                    try await link.send(hello)
                    // The peer echoes each link's first message back on the same link.
                    #expect(try await link.incoming.next(1, within: limit) == [hello])
                }
            }
            for _ in 0..<count {
                group.addTask {
                    let link = try await log.accepted(from: a.localEndpoint, within: limit)
                    let first = try await link.incoming.next(1, within: limit)
                    try await link.send(first[0])
                }
            }
            try await group.waitForAll()
        }
    }

    // MARK: Stopping

    /// Stopping a transport closes every link it opened or accepted, on both ends.
    public func checkStopClosesLinks() async throws {
        let peers = try await running(2)
        defer { Task { await peers.stop() } }
        let (a, b) = (peers.transports[0], peers.transports[1])
        var links: [any Link] = []
        for _ in 0..<2 {
            links.append(try await a.open(to: b.localEndpoint))
            links.append(try await peers.logs[1].accepted(from: a.localEndpoint, within: stepLimit))
        }
        links.append(try await b.open(to: a.localEndpoint))
        links.append(try await peers.logs[0].accepted(from: b.localEndpoint, within: stepLimit))

        await a.stop()
        for link in links {
            #expect(try await link.incoming.remaining(within: stepLimit).isEmpty, "\(link.description) stayed open")
            await #expect(throws: LinkError.closed) { try await link.send([1]) }
        }
    }

    // MARK: Helpers

    /// `count` transports, started, their events recorded from before the start.
    public func running(_ count: Int) async throws -> RunningTransports {
        let fixture = try await makeTransports(count)
        let logs = fixture.transports.map { TransportEventLog($0.events) }
        for transport in fixture.transports { try await transport.start() }
        return RunningTransports(transports: fixture.transports, logs: logs, setReachable: fixture.setReachable)
    }

    /// A link dialled from one new transport to another and the other's accepted end.
    public func openPair() async throws -> (any Link, any Link) {
        let peers = try await running(2)
        let (a, b) = (peers.transports[0], peers.transports[1])
        let opened = try await within(stepLimit, "dialling") { try await a.open(to: b.localEndpoint) }
        return (opened, try await peers.logs[1].accepted(from: a.localEndpoint, within: stepLimit))
    }

    /// Dials and expects a failure, allowing it a tenth of a step: a transport that can tell at
    /// once must not wait out a timeout.
    private func dialFailing(_ transport: any Transport, to endpoint: TransportEndpoint) async throws {
        let link = try await within(stepLimit / 10, "dialling \(endpoint), which cannot answer") {
            try await transport.open(to: endpoint)
        }
        link.close()
    }
}

/// Transports that a conformance check made, not yet started.
public struct TransportFixture: Sendable {
    public let transports: [any Transport]
    /// Moves two of `transports` (by index) in or out of each other's reach; nil for a transport
    /// whose tests cannot change reach.
    public let setReachable: (@Sendable (Int, Int, Bool) async -> Void)?

    public init(transports: [any Transport], setReachable: (@Sendable (Int, Int, Bool) async -> Void)? = nil) {
        self.transports = transports
        self.setReachable = setReachable
    }
}

/// Started transports and what each has announced.
public struct RunningTransports: Sendable {
    public let transports: [any Transport]
    public let logs: [TransportEventLog]
    public let setReachable: (@Sendable (Int, Int, Bool) async -> Void)?

    public func stop() async {
        for transport in transports { await transport.stop() }
    }
}

import ArcusAgent
import ArcusBench
import ArcusCRDT
import ArcusLoopback
import ArcusMesh

/// `arcus demo --scenario failover`: two peers joined by a fast (LAN) and a slow (BLE) emulated
/// link, one `PeerSession` over both, each peer sending numbered messages to the other at a
/// steady rate. Mid-run the fast link is cut as a radio going out of range would: nothing more
/// either way and neither end told, so both sessions must notice by missed heartbeats. Later a
/// new fast link comes. The demo measures how long traffic takes to flow again and checks that
/// every message arrived once, in order.
public struct FailoverDemo: Sendable {
    public struct Options: Sendable {
        /// How long the peers send.
        public var seconds = 10.0
        /// Messages per second, each way.
        public var rate = 100.0
        /// When the fast link is cut and when it is back, as shares of `seconds`.
        public var cutAt = 0.4
        public var restoreAt = 0.7
        public var session = SessionConfiguration()
        public var seed: UInt64 = 1
        public init() {}
    }

    public struct Figures: Sendable {
        /// Seconds from the cut until the first message sent after it arrived, in the slower of the
        /// two directions: the time the sessions took to move to the slow link.
        public var switchSeconds: Double?
        /// Seconds from the fast link's return until data arrived on it again, in the slower direction.
        public var returnSeconds: Double?
        public var lost = 0
        public var duplicated = 0
        public var reordered = 0
        public var messages = 0
        public var seconds = 0.0
        public var seed: UInt64 = 0

        public var jsonLine: String {
            func rounded(_ value: Double?) -> Value { value.map { .double(($0 * 1000).rounded() / 1000) } ?? .null }
            let fields: [(String, Value)] = [
                ("demo", "failover"), ("switch_s", rounded(switchSeconds)), ("lost", .int(Int64(lost))),
                ("duplicated", .int(Int64(duplicated))), ("reordered", .int(Int64(reordered))),
                ("return_s", rounded(returnSeconds)), ("messages", .int(Int64(messages))),
                ("seconds", .double(seconds)), ("seed", .string(String(seed))),
            ]
            return FigureLine.json(fields)
        }
    }

    public let options: Options

    public init(options: Options) {
        self.options = options
    }

    public func run(progress: @escaping @Sendable (String) -> Void = { _ in }) async throws -> Figures {
        let alphaID = PeerIdentity().peerID, bravoID = PeerIdentity().peerID
        let alpha = Multiplexer(localPeer: alphaID, configuration: options.session)
        let bravo = Multiplexer(localPeer: bravoID, configuration: options.session)
        func connect(_ conditions: LoopbackConditions, _ kind: LinkKind, _ name: String) async throws -> SeverableLink {
            let (a, b) = Loopback.severablePair(conditions, name: name, kind: kind)
            async let alphaSide = alpha.add(a, as: .dialer)
            async let bravoSide = bravo.add(b, as: .acceptor)
            _ = try await (alphaSide, bravoSide)
            return a
        }
        let fast = try await connect(.lan, .lan, "lan")
        _ = try await connect(.ble, .bluetooth, "ble")
        let alphaSession = await alpha.session(with: bravoID), bravoSession = await bravo.session(with: alphaID)
        let directions = [
            FailoverDirection(name: "alpha→bravo", sender: alphaSession, receiver: bravoSession),
            FailoverDirection(name: "bravo→alpha", sender: bravoSession, receiver: alphaSession),
        ]
        for direction in directions { direction.startReceiving() }

        let clock = ContinuousClock()
        let start = clock.now
        let cutTime = start + .milliseconds(Int64(options.seconds * options.cutAt * 1000))
        let restoreTime = start + .milliseconds(Int64(options.seconds * options.restoreAt * 1000))
        let end = start + .milliseconds(Int64(options.seconds * 1000))
        let interval = Duration.nanoseconds(Int64(1e9 / max(options.rate, 0.001)))
        var random = SplitMix64(seed: options.seed)
        var cutAt: ContinuousClock.Instant?, restoredAt: ContinuousClock.Instant?
        var sentBeforeCut: [Int] = []
        var nextReport = start + .seconds(1)

        // Each direction writes on a task of its own, so that one direction's backpressure never
        // holds the other back.
        let writers = directions.enumerated().map { offset, direction in
            let seed = random.next()
            return Task { try await direction.write(every: interval, until: end, seed: seed ^ UInt64(offset)) }
        }
        while clock.now < end {
            let now = clock.now
            if cutAt == nil, now >= cutTime {
                sentBeforeCut = directions.map(\.sent)
                fast.sever()
                cutAt = clock.now
                progress("cut the lan link")
            }
            if restoredAt == nil, now >= restoreTime {
                restoredAt = clock.now
                _ = try await connect(.lan, .lan, "lan again")
                progress("restored the lan link")
            }
            if now >= nextReport {
                nextReport = nextReport + .seconds(1)
                let active = await alphaSession.activeLink.map { "\($0.kind)" } ?? "none"
                progress("\(Int((now - start) / .seconds(1)))s: \(directions.map(\.sent).reduce(0, +)) sent, \(directions.map(\.receivedCount).reduce(0, +)) received, alpha sends on \(active)")
            }
            try await Task.sleep(until: min(nextReport, cutAt == nil ? cutTime : restoredAt == nil ? restoreTime : end), clock: .continuous)
        }
        for writer in writers { try await writer.value }

        // Settle: everything sent must arrive (the slow link may still be draining).
        let settleLimit = clock.now + .seconds(30)
        while clock.now < settleLimit, directions.contains(where: { $0.receivedCount < $0.sent }) {
            try await Task.sleep(for: .milliseconds(20))
        }
        try await Task.sleep(for: .milliseconds(100))
        await alpha.close()
        await bravo.close()

        var figures = Figures()
        figures.seconds = options.seconds
        figures.seed = options.seed
        for direction in directions {
            let outcome = direction.outcome()
            figures.messages += direction.sent
            figures.lost += outcome.lost
            figures.duplicated += outcome.duplicated
            figures.reordered += outcome.reordered
        }
        if let cutAt {
            let switches = zip(directions, sentBeforeCut).map { direction, sent in
                direction.firstArrival(ofIndexAtLeast: sent).map { ($0 - cutAt) / .seconds(1) }
            }
            if !switches.contains(where: { $0 == nil }) { figures.switchSeconds = switches.compactMap { $0 }.max() }
        }
        if let restoredAt {
            let returns = directions.map { $0.firstArrival(after: restoredAt, onKind: .lan).map { ($0 - restoredAt) / .seconds(1) } }
            if !returns.contains(where: { $0 == nil }) { figures.returnSeconds = returns.compactMap { $0 }.max() }
        }
        return figures
    }
}

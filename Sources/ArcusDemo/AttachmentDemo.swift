import ArcusAgent
import ArcusBench
import ArcusCRDT
import ArcusStore
import ArcusSync
import Foundation
import Synchronization

/// `arcus demo --scenario attachment`: a blob fetched across hops and cut off half-way.
///
/// A chain of `hops + 1` peers, all subscribed to `photos`. The first peer stores a blob and a
/// document holding its token; the token syncs down the chain, the bytes do not. The last peer
/// fetches the blob: every peer between fetches it from its own neighbour and serves it on.
/// When half of it has arrived, the link into the last peer drops; a few moments later it comes
/// back, and the fetch goes on from the bytes that had arrived. The demo checks the blob against
/// its hash and reports how much crossed the last link twice.
public struct AttachmentDemo: Sendable {
    public struct Options: Sendable {
        public var hops = 2
        public var bytes = 256 << 10
        public var link = EmulatedLink.lan
        /// How long the cut link stays down.
        public var downtime = 1.0
        /// How long the fetch may take in all before the demo gives up.
        public var limit = 300.0
        public var seed: UInt64 = 1
        public init() {}
    }

    public struct Figures: Sendable {
        public var hops = 0
        public var bytes = 0
        public var link = ""
        /// Bytes the fetcher held when its link dropped, and when the link came back.
        public var cutAtBytes: Int64 = 0
        public var resumedFromBytes: Int64 = 0
        /// Whether the fetched bytes are the blob, and the fetcher's store keeps them.
        public var verified = false
        public var fetchSeconds: Double?
        /// Progress reports the fetcher received.
        public var progressReports = 0
        /// Bytes the last peer received over its links, before the cut and after it.
        public var lastLinkBytes = 0
        public var seed: UInt64 = 0

        public var jsonLine: String {
            let fields: [(String, Value)] = [
                ("demo", "attachment"), ("verified", .bool(verified)), ("hops", .int(Int64(hops))),
                ("bytes", .int(Int64(bytes))), ("link", .string(link)),
                ("cut_at_bytes", .int(cutAtBytes)), ("resumed_from_bytes", .int(resumedFromBytes)),
                ("last_link_bytes", .int(Int64(lastLinkBytes))),
                ("fetch_s", fetchSeconds.map { .double(($0 * 1000).rounded() / 1000) } ?? .null),
                ("progress_reports", .int(Int64(progressReports))), ("seed", .string(String(seed))),
            ]
            return FigureLine.json(fields)
        }
    }

    /// The farthest a blob can be from its fetcher: a request is relayed through at most
    /// `SyncEngine.attachmentRelays` peers.
    public static let maximumHops = SyncEngine.attachmentRelays + 1

    public let options: Options

    public init(options: Options) {
        self.options = options
    }

    public func run(progress: @escaping @Sendable (String) -> Void = { _ in }) async throws -> Figures {
        let topology = Topology(.chain, peers: options.hops + 1, seed: options.seed)
        let mesh = try LoopbackMesh(topology: topology, links: .loopback(options.link.conditions)) { storeOptions in
            try Store(inMemory: storeOptions)
        }
        defer { mesh.stop() }
        var figures = Figures()
        figures.hops = options.hops
        figures.bytes = options.bytes
        figures.link = options.link.rawValue
        figures.seed = options.seed

        var random = SplitMix64(seed: options.seed)
        let blob = Data((0..<options.bytes).map { _ in UInt8.random(in: 0...255, using: &random) })
        let source = mesh.peers[0], fetcher = mesh.peers[options.hops]
        let token = try source.store.newAttachment(blob, metadata: ["name": "photo.bin"])
        try source.store.collection("photos").findByID(.string("photo")).update { $0["image"].set(token) }
        for peer in mesh.peers { _ = try peer.engine.registerSubscription("SELECT * FROM photos") }
        mesh.connectAll()

        // The token arrives with the document; no attachment byte moves with it.
        let deadline = ContinuousClock.now + .seconds(options.limit)
        while try fetcher.store.collection("photos").findByID(.string("photo")).exec() == nil {
            guard ContinuousClock.now < deadline else { throw DemoError("the document holding the token never reached the last peer") }
            try await Task.sleep(for: .milliseconds(10))
        }
        progress("the token crossed \(options.hops) hops; fetching \(options.bytes) bytes on the last peer")

        let lastLink = Topology.Link(options.hops - 1, options.hops)
        let half = Int64(options.bytes / 2)
        let reports = Mutex((count: 0, lastPercent: -10, cutAt: Int64(-1)))
        let start = ContinuousClock.now
        let fetch = Task {
            try await fetcher.engine.fetchAttachment(token) { report in
                let line: String? = reports.withLock { state in
                    state.count += 1
                    if state.cutAt < 0, report.bytesFetched >= half {
                        state.cutAt = report.bytesFetched
                        mesh.drop(lastLink, peerNoticesAfter: .milliseconds(100))
                        return "\(report.bytesFetched) of \(report.totalBytes) bytes: the last link drops"
                    }
                    let percent = Int(report.fraction * 100)
                    guard percent >= state.lastPercent + 10 else { return nil }
                    state.lastPercent = percent
                    return "\(report.bytesFetched) of \(report.totalBytes) bytes (\(percent)%)"
                }
                if let line { progress(line) }
            }
        }
        // Bring the link back once it has been down for `downtime`.
        while reports.withLock({ $0.cutAt }) < 0 {
            guard ContinuousClock.now < deadline else {
                fetch.cancel()
                throw DemoError("the fetch did not get half-way within \(options.limit) s")
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        try await Task.sleep(for: .seconds(options.downtime))
        figures.resumedFromBytes = fetcher.store.receivedAttachmentBytes(hash: token.hash)
        progress("the last link is back; resuming from \(figures.resumedFromBytes) bytes")
        mesh.connect(lastLink)

        let limit = Task {
            try await Task.sleep(until: deadline, clock: .continuous)
            fetch.cancel()
        }
        defer { limit.cancel() }
        let data = try await fetch.value
        figures.fetchSeconds = (ContinuousClock.now - start) / .seconds(1)
        figures.cutAtBytes = reports.withLock { $0.cutAt }
        figures.progressReports = reports.withLock { $0.count }
        // The engine checked the bytes against the token's hash; check them against the blob too.
        figures.verified = data == blob && fetcher.store.hasAttachment(token)
        figures.lastLinkBytes = mesh.bytesReceived(by: options.hops)
        return figures
    }
}

/// Why a demo could not finish.
public struct DemoError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

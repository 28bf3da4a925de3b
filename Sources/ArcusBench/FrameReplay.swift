import ArcusAgent
import ArcusCRDT
import ArcusCodec
import ArcusStore
import Foundation

/// `TraceBench` with `exchange: .frames`: every `sync from→to` is two frames — `to` sends a
/// summary of what it has seen (its version vector), `from` answers with a delta batch of what
/// `to` lacks — between replicas in memory (`TraceReplica`) or in durable stores
/// (`StoreReplica`). A fresh peer gets one batch of every document's whole state.
extension TraceBench {
    func runFrames(progress: ((Double) -> Void)?) async throws -> Figures {
        let clock = ReplayClock()
        switch storage {
        case .memory:
            var generator = SystemRandomNumberGenerator()
            return try await runFrames(clock: clock, progress: progress) {
                TraceReplica(site: SiteID.random(using: &generator), clock: HybridLogicalClock(physical: clock.physical))
            }
        case .sqlite:
            let root = scratch.appendingPathComponent("arcus-trace-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: root) }
            var options = Store.Options()
            options.physicalClock = clock.physical
            var made = 0
            return try await runFrames(clock: clock, progress: progress) {
                made += 1
                return try StoreReplica(directory: root.appendingPathComponent("replica-\(made)"), options: options)
            }
        }
    }

    private func runFrames<Replica: ReplayReplica>(clock: ReplayClock, progress: ((Double) -> Void)?,
                                                   makeReplica: () throws -> Replica) async throws -> Figures {
        var figures = Figures(trace: trace.header.name, store: storage.rawValue)
        figures.exchange = Exchange.frames.rawValue
        let replicas = try (0..<trace.header.replicas).map { _ in try makeReplica() }
        try await replayOperations(clock: clock, into: &figures, progress: progress) { replica, key, mutation in
            try replicas[replica].apply(key, mutation)
        } sync: { from, to, figures in
            figures.wireBytes += try Self.sync(from: replicas[from], to: replicas[to], stages: &figures.stages)
            figures.frames += 2
        }

        // A fresh peer catching up with replica 0.
        let encodeStart = monotonicSeconds()
        var encoder = FrameEncoder()
        let snapshot = encoder.encode(.deltaBatch(try replicas[0].snapshot()))
        figures.snapshotEncodeSeconds = monotonicSeconds() - encodeStart
        figures.snapshotBytes = snapshot.count
        let decodeStart = monotonicSeconds()
        var decoder = FrameDecoder()
        let fresh = try makeReplica()
        guard case .deltaBatch(let batch)? = try decoder.decode(snapshot) else { throw BenchError("snapshot did not decode as a delta batch") }
        try fresh.receive(batch)
        figures.snapshotDecodeSeconds = monotonicSeconds() - decodeStart

        let snapshots = try (replicas + [fresh]).map { try $0.snapshot() }
        if ProcessInfo.processInfo.environment["ARCUS_BENCH_SIZES"] != nil {
            let sizes = snapshots[0].documents.map(\.state.cells.count).sorted()
            print("cells per document: mean \(sizes.reduce(0, +) / max(sizes.count, 1)) median \(sizes[sizes.count / 2]) p90 \(sizes[sizes.count * 9 / 10]) max \(sizes.last ?? 0)")
        }
        (figures.converged, figures.stateJSONBytes) = Self.compare(snapshots, collections: trace.header.collections)
        return figures
    }

    /// One one-way sync over a fresh session; returns the bytes of both frames.
    static func sync<Replica: ReplayReplica>(from sender: Replica, to receiver: Replica, stages: inout Stages) throws -> Int {
        var receiverOut = FrameEncoder(), senderIn = FrameDecoder()
        var senderOut = FrameEncoder(), receiverIn = FrameDecoder()
        let t0 = monotonicSeconds()
        let request = receiverOut.encode(.summary(Summary(version: receiver.version)))
        guard case .summary(let summary)? = try senderIn.decode(request) else { throw BenchError("summary did not decode") }
        let (batch, position) = try sender.changes(since: summary.version, for: receiver)
        let t1 = monotonicSeconds()
        let response = senderOut.encode(.deltaBatch(batch))
        let t2 = monotonicSeconds()
        guard case .deltaBatch(let received)? = try receiverIn.decode(response) else { throw BenchError("delta batch did not decode") }
        let t3 = monotonicSeconds()
        try receiver.receive(received)
        sender.acknowledge(position, by: receiver)
        let t4 = monotonicSeconds()
        stages.select += t1 - t0
        stages.encode += t2 - t1
        stages.decode += t3 - t2
        stages.join += t4 - t3
        return request.count + response.count
    }
}

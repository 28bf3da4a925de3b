import ArcusCRDT
import ArcusCodec
import ArcusLoopback
import ArcusStore
import ArcusSync
import Foundation

/// `TraceBench` with `exchange: .protocol`: each replica is a `Store` (in memory, or durable in
/// its own data directory) with a `SyncEngine` subscribed to everything, and every
/// `sync from→to` is one sync session over a fresh loopback link: `to` pulls, `from` only
/// serves, and the link closes once `to` has everything `from` had and `from` has its ack.
/// The acknowledged positions persist in the stores, so the next sync between the same two
/// resumes where this one ended, as it would between two devices.
extension TraceBench {
    /// One replica: a store and the engine that syncs it.
    final class SessionReplica {
        let store: Store
        let engine: SyncEngine

        init(store: Store) throws {
            self.store = store
            engine = try SyncEngine(store: store)
            _ = try engine.registerSubscription("")
        }

        /// Every document's whole state, for comparing replicas.
        func snapshot() throws -> DeltaBatch { try store.changes(after: 0, since: .empty, limit: .max).batch }
    }

    func runSessions(progress: ((Double) -> Void)?) async throws -> Figures {
        var figures = Figures(trace: trace.header.name, store: storage.rawValue)
        figures.exchange = Exchange.protocol.rawValue
        let root = scratch.appendingPathComponent("arcus-trace-\(UUID().uuidString)")
        let clock = ReplayClock()
        var options = Store.Options()
        options.physicalClock = clock.physical
        var made = 0
        func makeReplica() throws -> SessionReplica {
            made += 1
            switch storage {
            case .memory: return try SessionReplica(store: try Store(inMemory: options))
            case .sqlite: return try SessionReplica(store: try Store(directory: root.appendingPathComponent("replica-\(made)"), options: options))
            }
        }
        var replicas: [SessionReplica] = []
        defer {
            for replica in replicas { replica.engine.stop() }
            try? FileManager.default.removeItem(at: root)
        }
        for _ in 0..<trace.header.replicas { replicas.append(try makeReplica()) }
        let total = trace.operations.count
        let step = max(total / 20, 1)

        let start = monotonicSeconds()
        for (n, operation) in trace.operations.enumerated() {
            clock.advance()
            if let write = operation.write {
                let opStart = monotonicSeconds()
                try replicas[write.replica].store.write { tx in _ = try tx.apply(write.key, write.mutation) }
                figures.stages.write += monotonicSeconds() - opStart
                figures.ops += 1
            } else if case .sync(let from, let to) = operation {
                let moved = try await Self.session(from: replicas[from], to: replicas[to])
                figures.wireBytes += moved.bytes
                figures.frames += moved.frames
                figures.syncs += 1
            }
            if n % step == 0 { progress?(Double(n) / Double(total)) }
        }
        figures.replaySeconds = monotonicSeconds() - start
        progress?(1)

        // A fresh peer catching up with replica 0 through the same protocol. Producing and
        // merging overlap in a session, so the whole exchange counts as encoding.
        let fresh = try makeReplica()
        replicas.append(fresh)
        let snapshotStart = monotonicSeconds()
        let snapshot = try await Self.session(from: replicas[0], to: fresh)
        figures.snapshotEncodeSeconds = monotonicSeconds() - snapshotStart
        figures.snapshotDecodeSeconds = nil
        figures.snapshotBytes = snapshot.bytes

        let snapshots = try replicas.map { try $0.snapshot() }
        (figures.converged, figures.stateJSONBytes) = Self.compare(snapshots, collections: trace.header.collections)
        return figures
    }

    /// One one-way sync: a session over a fresh loopback link until `client` has everything
    /// `server` has and `server` has taken every frame `client` sent (its last ack). Returns
    /// the frames both sides sent and their bytes.
    static func session(from server: SessionReplica, to client: SessionReplica) async throws -> (bytes: Int, frames: Int) {
        let (serverLink, clientLink) = Loopback.pair(.instant, name: "trace")
        let serverChannel = LinkSyncChannel(serverLink), clientChannel = LinkSyncChannel(clientLink)
        let serving = server.engine.connect(serverChannel, pulling: false)
        let pulling = client.engine.connect(clientChannel)
        guard await pulling.waitUntilCaughtUp() else {
            throw BenchError("a sync session ended before the subscriber caught up: \(await pulling.endReason ?? "no reason given")")
        }
        await pulling.waitUntilIdle()
        let sent = await pulling.statistics.framesSent
        while await serving.statistics.framesReceived < sent, await serving.endReason == nil {
            await Task.yield()
        }
        clientChannel.close()
        await serving.waitUntilEnded()
        await pulling.waitUntilEnded()
        let a = serverChannel.framesSent, b = clientChannel.framesSent
        return (a.bytes + b.bytes, a.frames + b.frames)
    }
}

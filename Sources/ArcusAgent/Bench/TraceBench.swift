import ArcusCRDT
import ArcusCodec
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Replays a trace and measures what TRACE.md asks for, on replicas kept in memory or in
/// durable stores (SQLite, one data directory each).
///
/// Every write goes through the CRDT's delta-mutators. Every `sync from→to` is two frames:
/// `to` sends a summary of what it has seen (its version vector), `from` answers with a delta
/// batch of what `to` lacks. Each sync is a fresh session, so interning starts empty; both
/// whole frames (headers and checksums included) count in `wire_bytes`.
public struct TraceBench {
    public struct Figures: Sendable {
        public var trace: String
        public var store: String
        public var ops = 0
        public var syncs = 0
        public var wireBytes = 0
        public var frames = 0
        public var snapshotBytes = 0
        public var replaySeconds = 0.0
        public var snapshotEncodeSeconds = 0.0
        public var snapshotDecodeSeconds = 0.0
        public var converged = false
        public var stateJSONBytes = 0
        public var stages = Stages()

        /// One JSON line, with the keys of TRACE.md first.
        public var jsonLine: String {
            func r(_ x: Double, _ digits: Int) -> Value {
                var scale = 1.0
                for _ in 0..<digits { scale *= 10 }
                return .double((x * scale).rounded() / scale)
            }
            let fields: [(String, Value)] = [
                ("engine", "arcus"), ("ops", .int(Int64(ops))), ("syncs", .int(Int64(syncs))),
                ("wire_bytes", .int(Int64(wireBytes))), ("snapshot_bytes", .int(Int64(snapshotBytes))),
                ("replay_s", r(replaySeconds, 4)), ("snapshot_encode_s", r(snapshotEncodeSeconds, 5)),
                ("snapshot_decode_s", r(snapshotDecodeSeconds, 5)), ("converged", .bool(converged)),
                ("state_json_bytes", .int(Int64(stateJSONBytes))), ("trace", .string(trace)),
                ("store", .string(store)), ("frames", .int(Int64(frames))),
                ("write_s", r(stages.write, 4)), ("sync_select_s", r(stages.select, 4)), ("sync_encode_s", r(stages.encode, 4)),
                ("sync_decode_s", r(stages.decode, 4)), ("sync_join_s", r(stages.join, 4)),
            ]
            return "{" + fields.map { "\(Value.string($0.0).jsonString): \($0.1.jsonString)" }.joined(separator: ", ") + "}"
        }
    }

    /// Where replicas keep their documents.
    public enum Storage: String, Sendable, CaseIterable {
        /// In memory, indexed for replay.
        case memory
        /// Each replica a `Store` in its own data directory under `scratch`.
        case sqlite
    }

    public let trace: Trace
    public let storage: Storage
    /// Where `sqlite` replicas keep their data directories (removed afterwards).
    public let scratch: URL

    public init(trace: Trace, storage: Storage = .memory, scratch: URL = FileManager.default.temporaryDirectory) {
        self.trace = trace
        self.storage = storage
        self.scratch = scratch
    }

    /// Replays the trace; `progress` is called now and then with the share done (0…1).
    public func run(progress: ((Double) -> Void)? = nil) throws -> Figures {
        switch storage {
        case .memory:
            var generator = SystemRandomNumberGenerator()
            return try run(progress: progress) { TraceReplica(site: SiteID.random(using: &generator)) }
        case .sqlite:
            let root = scratch.appendingPathComponent("arcus-trace-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: root) }
            var made = 0
            return try run(progress: progress) {
                made += 1
                return try StoreReplica(directory: root.appendingPathComponent("replica-\(made)"))
            }
        }
    }

    private func run<Replica: ReplayReplica>(progress: ((Double) -> Void)?, makeReplica: () throws -> Replica) throws -> Figures {
        var figures = Figures(trace: trace.header.name, store: storage.rawValue)
        let replicas = try (0..<trace.header.replicas).map { _ in try makeReplica() }
        let total = trace.operations.count
        let step = max(total / 20, 1)

        let start = monotonicSeconds()
        for (n, operation) in trace.operations.enumerated() {
            let opStart = monotonicSeconds()
            defer { if case .sync = operation {} else { figures.stages.write += monotonicSeconds() - opStart } }
            switch operation {
            case .upsert(let r, let key, let fields):
                try replicas[r].apply(key) { state, stamp in state.upsert(fields, at: stamp) }
            case .set(let r, let key, let path, let value):
                try replicas[r].apply(key) { state, stamp in state.set(path, to: value, at: stamp) }
            case .increment(let r, let key, let path, let amount):
                try replicas[r].apply(key) { state, stamp in state.increment(path, by: amount, at: stamp) }
            case .unset(let r, let key, let path):
                try replicas[r].apply(key) { state, stamp in state.unset(path, at: stamp) }
            case .remove(let r, let key):
                try replicas[r].apply(key) { state, stamp in state.remove(at: stamp) }
            case .sync(let from, let to):
                let bytes = try Self.sync(from: replicas[from], to: replicas[to], stages: &figures.stages)
                figures.wireBytes += bytes
                figures.frames += 2
                figures.syncs += 1
            }
            if case .sync = operation {} else { figures.ops += 1 }
            if n % step == 0 { progress?(Double(n) / Double(total)) }
        }
        figures.replaySeconds = monotonicSeconds() - start
        progress?(1)

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

        // Every replica, and the fresh peer, must hold the same documents: the same visible
        // JSON, and the same CRDT states (an empty state and an absent document are the same:
        // a replica keeps an empty one when its only write to a document changed nothing).
        let snapshots = try (replicas + [fresh]).map { try $0.snapshot() }
        if ProcessInfo.processInfo.environment["ARCUS_BENCH_SIZES"] != nil {
            let sizes = snapshots[0].documents.map(\.state.cells.count).sorted()
            print("cells per document: mean \(sizes.reduce(0, +) / max(sizes.count, 1)) median \(sizes[sizes.count / 2]) p90 \(sizes[sizes.count * 9 / 10]) max \(sizes.last ?? 0)")
        }
        let reference = snapshots[0].stateJSON(collections: trace.header.collections).jsonString
        figures.stateJSONBytes = reference.utf8.count
        let roots = snapshots.map { snapshot in
            Dictionary(snapshot.documents.map { ($0.key, $0.state.root) }, uniquingKeysWith: { a, _ in a })
                .filter { $0.value != DocumentState().root }
        }
        figures.converged = roots.dropFirst().allSatisfy { $0 == roots[0] }
            && snapshots.allSatisfy { $0.stateJSON(collections: trace.header.collections).jsonString == reference }
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

    /// Where sync time goes, summed over the replay.
    public struct Stages: Sendable {
        public var write = 0.0, select = 0.0, encode = 0.0, decode = 0.0, join = 0.0
    }
}

public struct BenchError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

func monotonicSeconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}

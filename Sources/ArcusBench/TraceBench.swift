import ArcusAgent
import ArcusCRDT
import ArcusCodec
import ArcusStore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Replays a trace and measures what TRACE.md asks for, on replicas kept in memory or in
/// durable stores (SQLite, one data directory each).
///
/// Every write goes through the CRDT's delta-mutators. How a `sync from→to` happens depends on
/// `exchange`: by default through the replication protocol, a session over a loopback link
/// (see `SessionReplay`); or as the two frames the codec alone needs (see `FrameReplay`).
/// Either way every whole frame both sides send (headers and checksums included) counts in
/// `wire_bytes`, and each sync starts a fresh session, so interning starts empty.
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
        /// Nil when decoding overlaps encoding (a protocol session) and has no time of its own.
        public var snapshotDecodeSeconds: Double? = 0
        public var converged = false
        public var stateJSONBytes = 0
        public var stages = Stages()
        public var exchange = Exchange.protocol.rawValue
        /// With `secure`: the handshakes' bytes (counted in `wireBytes` too), and the sync
        /// frames' bytes alone — what `wireBytes` is in a plain run. Nil (and not printed) plain.
        public var handshakeBytes: Int?
        public var syncFrameBytes: Int?
        /// With `secure`: how the replicas joined the mesh (`Credential`).
        public var credential: String?
        /// With `exchange: .protocol`: what one sync costs between two replicas already in sync
        /// (hellos, subscription, summary, the empty answer, the ack; the median of
        /// `IdleExchange.rounds`), and what the replay cost per operation beyond that.
        public var idleExchange: IdleExchange?
        /// With `exchange: .protocol`: the documents the replay wrote, each a row of a store —
        /// local writes that changed something, and documents a sync merged that changed its
        /// receiver. A store's work grows with these rows rather than with the trace's
        /// operations: one operation reaches every other replica.
        public var localChanges: Int?
        public var documentsMerged: Int?

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
                ("snapshot_decode_s", snapshotDecodeSeconds.map { r($0, 5) } ?? .null), ("converged", .bool(converged)),
                ("state_json_bytes", .int(Int64(stateJSONBytes))), ("trace", .string(trace)),
                ("store", .string(store)), ("exchange", .string(exchange)), ("frames", .int(Int64(frames))),
                ("write_s", r(stages.write, 4)), ("sync_select_s", r(stages.select, 4)), ("sync_encode_s", r(stages.encode, 4)),
                ("sync_decode_s", r(stages.decode, 4)), ("sync_join_s", r(stages.join, 4)),
            ]
            var idle: [(String, Value)] = []
            if let idleExchange {
                let perUpdate = (replaySeconds - Double(syncs) * idleExchange.seconds) / Double(max(ops, 1))
                idle = [("idle_exchange_us", r(idleExchange.seconds * 1e6, 1)), ("idle_exchange_cpu_us", r(idleExchange.cpuSeconds * 1e6, 1)),
                        ("idle_exchange_bytes", .int(Int64(idleExchange.bytes))), ("idle_exchange_frames", .int(Int64(idleExchange.frames))),
                        ("per_update_us", r(max(perUpdate, 0) * 1e6, 2))]
                if let localChanges, let documentsMerged {
                    let perDocument = (replaySeconds - Double(syncs) * idleExchange.seconds) / Double(max(localChanges + documentsMerged, 1))
                    idle += [("local_changes", .int(Int64(localChanges))), ("documents_merged", .int(Int64(documentsMerged))),
                             ("per_document_us", r(max(perDocument, 0) * 1e6, 2))]
                }
            }
            var secured: [(String, Value)] = []
            if let handshakeBytes, let syncFrameBytes {
                secured = [("secure", .bool(true)), ("credential", .string(credential ?? "")), ("handshake_bytes", .int(Int64(handshakeBytes))),
                           ("sync_frame_bytes", .int(Int64(syncFrameBytes)))]
            }
            return FigureLine.json(fields + idle + secured)
        }
    }

    /// Where replicas keep their documents.
    public enum Storage: String, Sendable, CaseIterable {
        /// In memory, indexed for replay.
        case memory
        /// Each replica a `Store` in its own data directory under `scratch`.
        case sqlite
    }

    /// How each `sync` of the trace happens.
    public enum Exchange: String, Sendable, CaseIterable {
        /// What devices do: a sync session over a loopback link between two `Store`s, each with
        /// a `SyncEngine` subscribed to everything — hellos, the subscription, summaries, delta
        /// batches and acks. A fresh peer catches up the same way.
        case `protocol`
        /// The codec's part alone: a summary and the delta batch that answers it, between
        /// replicas in memory (`TraceReplica`) or durable stores. The replay-speed figure.
        case frames
    }

    public let trace: Trace
    public let storage: Storage
    public let exchange: Exchange
    /// Where `sqlite` replicas keep their data directories (removed afterwards).
    public let scratch: URL
    /// With `exchange: .protocol`: every sync session's link goes through the mesh handshake (an
    /// identity per replica) and runs sealed (`SecureLink`).
    public let secure: Bool
    /// How secure replicas join the mesh: a shared secret, or certificates from one authority —
    /// every replica a relay, since every replica passes on what it received — whose receivers
    /// check each writer against its certificate, passed on ahead of its writes.
    public let credential: Credential
    /// Each replica's `Store.Options.conflictsPerField` (0, the agent's default, keeps none, and
    /// sync then sends nothing for the conflict view).
    public let conflictsPerField: Int

    public enum Credential: String, Sendable, CaseIterable {
        case secret, certificates
    }

    public init(trace: Trace, storage: Storage = .memory, exchange: Exchange = .protocol,
                scratch: URL = FileManager.default.temporaryDirectory, secure: Bool = false, credential: Credential = .secret,
                conflictsPerField: Int = Store.defaultConflictsPerField) {
        self.secure = secure
        self.conflictsPerField = conflictsPerField
        self.credential = credential
        self.trace = trace
        self.storage = storage
        self.exchange = exchange
        self.scratch = scratch
    }

    /// Replays the trace; `progress` is called now and then with the share done (0…1).
    public func run(progress: ((Double) -> Void)? = nil) async throws -> Figures {
        switch exchange {
        case .protocol: return try await runSessions(progress: progress)
        case .frames: return try await runFrames(progress: progress)
        }
    }

    /// One replay of the trace's operations, whatever the exchange: the replay clock advances
    /// before each operation, writes are timed and counted, syncs counted, progress reported,
    /// and the whole walk timed as `replaySeconds`. `write` applies one write; `sync` performs
    /// one sync and adds what it moved to the figures.
    func replayOperations(
        clock: ReplayClock, into figures: inout Figures, progress: ((Double) -> Void)?,
        write: (_ replica: Int, DocumentKey, (inout DocumentState, Stamp) -> DocumentState?) throws -> Void,
        sync: (_ from: Int, _ to: Int, inout Figures) async throws -> Void
    ) async throws {
        let total = trace.operations.count
        let step = max(total / 20, 1)
        let start = monotonicSeconds()
        for (n, operation) in trace.operations.enumerated() {
            clock.advance()
            if let change = operation.write {
                let opStart = monotonicSeconds()
                try write(change.replica, change.key, change.mutation)
                figures.stages.write += monotonicSeconds() - opStart
                figures.ops += 1
            } else if case .sync(let from, let to) = operation {
                try await sync(from, to, &figures)
                figures.syncs += 1
            }
            if n % step == 0 { progress?(Double(n) / Double(total)) }
        }
        figures.replaySeconds = monotonicSeconds() - start
        progress?(1)
    }

    /// Whether every replica holds the same documents — the same visible JSON and the same
    /// CRDT states (an empty state and an absent document are the same: a replica keeps an
    /// empty one when its only write to a document changed nothing) — and the size of the
    /// first one's JSON.
    static func compare(_ snapshots: [DeltaBatch], collections: [String]) -> (converged: Bool, stateJSONBytes: Int) {
        let reference = snapshots[0].stateJSON(collections: collections).jsonString
        let roots = snapshots.map { snapshot in
            Dictionary(snapshot.documents.map { ($0.key, $0.state.root) }, uniquingKeysWith: { a, _ in a })
                .filter { $0.value != DocumentState().root }
        }
        let converged = roots.dropFirst().allSatisfy { $0 == roots[0] }
            && snapshots.allSatisfy { $0.stateJSON(collections: collections).jsonString == reference }
        return (converged, reference.utf8.count)
    }

    /// One sync between two replicas that hold the same data: its fixed cost.
    public struct IdleExchange: Sendable {
        /// Sessions timed; the figures are their medians.
        public static let rounds = 51
        public var seconds = 0.0
        /// This process's CPU time (every thread) over the same session.
        public var cpuSeconds = 0.0
        public var bytes = 0
        public var frames = 0
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

/// CPU time this process has used, all threads.
func processCPUSeconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}

func monotonicSeconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}

import ArcusCRDT
import ArcusTestSupport
import Foundation
import Testing
@testable import ArcusAgent
@testable import ArcusBench

@Suite("Trace replay")
struct TraceBenchTests {
    @Test("the smoke trace replays through sync sessions, converges, and a fresh peer catches up the same way")
    func smokeTraceThroughSessions() async throws {
        let url = try #require(Bundle.module.url(forResource: "Fixtures/smoke-seed1", withExtension: "jsonl"))
        let trace = try Trace(contentsOf: url.path)
        let sessions = try await TraceBench(trace: trace).run()
        let frames = try await TraceBench(trace: trace, exchange: .frames).run()
        #expect(sessions.converged)
        #expect(sessions.exchange == "protocol")
        #expect(sessions.ops == 1500 && sessions.syncs == 50)
        // Each session: two hellos, a summary and at least one batch (and the subscription
        // itself, the first time two replicas meet).
        #expect(sessions.frames >= 4 * sessions.syncs)
        // A session costs about what the two frames the codec needs alone do: its own messages
        // (hellos, acks) against what it saves (no CRC when nothing is lost, no repeated names);
        // which wins by a few bytes depends on how batches split on a busy machine.
        #expect(sessions.wireBytes > frames.wireBytes * 9 / 10 && sessions.wireBytes < frames.wireBytes * 5 / 4,
                "protocol \(sessions.wireBytes) B, frames \(frames.wireBytes) B")
        #expect(sessions.snapshotBytes > 0 && sessions.snapshotDecodeSeconds == nil)
        // Two replicas in sync exchange hellos, a summary, an empty answer and no documents:
        // a few frames of a few dozen bytes, whatever the trace wrote.
        let idle = try #require(sessions.idleExchange)
        #expect(idle.frames >= 4 && idle.frames <= 6 && idle.bytes > 0 && idle.bytes < 200, "\(idle.frames) frames, \(idle.bytes) B")
        let line = try Value(json: sessions.jsonLine)
        // The rows the replay wrote: the writes that changed a document, and the documents the
        // pulling sides merged (the serving sides merge nothing, so a count taken from the wrong
        // side of a session is 0).
        let local = try #require(sessions.localChanges), merged = try #require(sessions.documentsMerged)
        #expect(local > sessions.ops / 2 && local <= sessions.ops, "\(local) local changes of \(sessions.ops) writes")
        #expect(merged > 0, "no document merged in \(sessions.syncs) syncs")
        for key in ["idle_exchange_us", "idle_exchange_cpu_us", "idle_exchange_bytes", "idle_exchange_frames", "per_update_us",
                    "local_changes", "documents_merged", "per_document_us"] {
            #expect(line[path: FieldPath([key])] != nil, "missing \(key)")
        }
    }

    @Test("secured with certificates, the smoke trace converges: every writer's events pass every receiver's check, each certificate passed on about once per pair")
    func smokeTraceWithCertificates() async throws {
        let url = try #require(Bundle.module.url(forResource: "Fixtures/smoke-seed1", withExtension: "jsonl"))
        let trace = try Trace(contentsOf: url.path)
        let secret = try await TraceBench(trace: trace, secure: true, credential: .secret).run()
        let certified = try await TraceBench(trace: trace, secure: true, credential: .certificates).run()
        #expect(secret.converged && certified.converged)
        #expect(certified.jsonLine.contains("\"credential\": \"certificates\""))
        // Certificates cost their bytes in handshakes and ahead of relayed writes, and nothing
        // else: a few kilobytes on a trace of about 50 kB, not a resend of refused documents.
        let extra = certified.wireBytes - secret.wireBytes
        #expect(extra > 0 && extra < secret.wireBytes / 10, "certificates cost \(extra) B over \(secret.wireBytes) B")
    }

    @Test("the smoke trace replays as frames, converges, and its snapshot brings a fresh peer to the same state")
    func smokeTrace() async throws {
        let url = try #require(Bundle.module.url(forResource: "Fixtures/smoke-seed1", withExtension: "jsonl"))
        let trace = try Trace(contentsOf: url.path)
        let figures = try await TraceBench(trace: trace, exchange: .frames).run()
        #expect(figures.converged)
        #expect(figures.ops == 1500)
        #expect(figures.syncs == 50)
        #expect(figures.frames == 2 * figures.syncs)
        #expect(figures.wireBytes > 0 && figures.snapshotBytes > 0)
        // The figures line carries the keys of shared/bench/TRACE.md.
        let line = try Value(json: figures.jsonLine)
        for key in ["engine", "ops", "syncs", "wire_bytes", "snapshot_bytes", "replay_s", "snapshot_encode_s",
                    "snapshot_decode_s", "converged", "state_json_bytes"] {
            #expect(line[path: FieldPath([key])] != nil, "missing \(key)")
        }
    }

    /// A random trace in the format of TRACE.md: writes on a few replicas, random one-way syncs,
    /// then two full rounds.
    static func randomTrace(_ rng: inout SeededRandom) -> Trace {
        let replicas = Int.random(in: 2...5, using: &rng)
        let names = ["status", "qty", "owner", "temp", "note"]
        var operations: [Trace.Operation] = []
        for _ in 0..<600 {
            let r = Int.random(in: 0..<replicas, using: &rng)
            let key = DocumentKey(["orders", "sensors"].randomElement(using: &rng)!, "d\(10000 + Int.random(in: 0..<30, using: &rng))")
            switch Int.random(in: 0..<12, using: &rng) {
            case 0..<3:
                var fields: [String: Value] = [:]
                for _ in 0..<Int.random(in: 1...4, using: &rng) { fields[names.randomElement(using: &rng)!] = RandomMutations.value(&rng) }
                operations.append(.upsert(replica: r, key: key, fields: fields))
            case 3..<6: operations.append(.set(replica: r, key: key, path: RandomMutations.path(&rng), value: RandomMutations.value(&rng)))
            case 6..<8: operations.append(.increment(replica: r, key: key, path: ["count"], by: .int(Int64.random(in: -2...5, using: &rng))))
            case 8: operations.append(.unset(replica: r, key: key, path: RandomMutations.path(&rng)))
            case 9: operations.append(.remove(replica: r, key: key))
            default:
                let to = (r + Int.random(in: 1..<replicas, using: &rng)) % replicas
                operations.append(.sync(from: r, to: to))
            }
        }
        for _ in 0..<2 {
            for a in 0..<replicas { for b in 0..<replicas where a != b { operations.append(.sync(from: a, to: b)) } }
        }
        return Trace(header: Trace.Header(name: "random", seed: 0, replicas: replicas, collections: ["orders", "sensors"]), operations: operations)
    }

    @Test("random traces converge, through sync sessions and as frames", arguments: SeededRandom.seeds(count: 8, test: "random-traces"))
    func randomTraces(seed: UInt64) async throws {
        print("random-traces seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        let trace = Self.randomTrace(&rng)
        for exchange in TraceBench.Exchange.allCases {
            let figures = try await TraceBench(trace: trace, exchange: exchange).run()
            #expect(figures.converged, "seed \(seed), \(exchange)")
        }
    }

    @Test("replicas kept in durable stores converge, through the same syncs as in memory", arguments: SeededRandom.seeds(count: 2, test: "durable-traces"))
    func durableReplicas(seed: UInt64) async throws {
        print("durable-traces seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        let trace = Self.randomTrace(&rng)
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-trace-test-\(seed)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let durable = try await TraceBench(trace: trace, storage: .sqlite, scratch: scratch).run()
        let memory = try await TraceBench(trace: trace, storage: .memory).run()
        #expect(durable.store == "sqlite")
        #expect(durable.converged, "seed \(seed)")
        #expect(durable.ops == memory.ops && durable.syncs == memory.syncs)
        #expect(durable.stateJSONBytes > 2, "the replicas hold documents")
        // Nothing is left behind in the scratch directory.
        let left = (try? FileManager.default.contentsOfDirectory(atPath: scratch.path)) ?? []
        #expect(left.isEmpty, "left in scratch: \(left)")
    }

    @Test("a malformed trace names the line and what is wrong", arguments: [
        ("", "line 1: empty trace"),
        ("{\"trace\": \"x\"}\n", "line 1: header needs \"replicas\""),
        ("{\"replicas\": 2}\n{\"op\": \"fly\"}\n", "line 2: unknown op"),
        ("{\"replicas\": 2}\n{\"op\": \"sync\", \"from\": 0, \"to\": 5}\n", "line 2: \"to\" must be a replica index below 2"),
        ("{\"replicas\": 2}\n{\"op\": \"set\", \"r\": 0, \"c\": \"a\", \"id\": \"b\", \"path\": [], \"v\": 1}\n", "line 2: needs a non-empty \"path\""),
        ("{\"replicas\": 2}\n{\"op\": \"upsert\", \"r\": 0, \"c\": \"a\", \"id\": \"b\", \"v\": [1]}\n", "line 2: upsert needs an object"),
        ("{\"replicas\": 2}\n{not json\n", "line 2: invalid JSON"),
    ])
    func malformed(text: String, expected: String) {
        #expect {
            _ = try Trace(data: Data(text.utf8))
        } throws: { error in
            "\(error)".contains(expected)
        }
    }
}


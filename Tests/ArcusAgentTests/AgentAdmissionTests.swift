import ArcusCRDT
import ArcusTestSupport
import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import Testing

/// The connection policy between agent processes over LAN TCP: a peer the mesh secret admits is
/// refused by a deny rule, or by the operator's callback (which also fails closed); `arcus peers`
/// shows what was decided and why.
@Suite(.serialized)
struct AgentAdmissionTests {
    /// A config for the listener: the scratch mesh's secret and `policy` (JSON members).
    static func config(_ scratch: MeshScratch, _ policy: String) throws -> String {
        let path = scratch.directory.appendingPathComponent("policy.json").path
        let secret = scratch.directory.appendingPathComponent("secret").path
        try Data(#"{"mesh_secret_file": "\#(secret)", \#(policy)}"#.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Starts two diallers, `refused` and `admitted`, toward `port`, then the listener with
    /// `policy` (the diallers' ids, which it needs, exist only once they started); each dialler
    /// writes a document; returns once `admitted`'s reached the listener, and checks that
    /// `refused`'s did not.
    static func run(_ scratch: MeshScratch, policy: (_ refused: String, _ admitted: String) throws -> String,
                    check: (_ listener: RunningAgent, _ refused: RunningAgent, _ admitted: RunningAgent) async throws -> Void) async throws {
        let port = try freePort()
        let lan = ["--config", scratch.config.path, "--transports", "lan", "--listen", "127.0.0.1:0", "--peer", "127.0.0.1:\(port)"]
        let refused = try await RunningAgent.launch(data: scratch.data("refused"), lan)
        defer { refused.dismiss() }
        let admitted = try await RunningAgent.launch(data: scratch.data("admitted"), lan)
        defer { admitted.dismiss() }
        let listener = try await RunningAgent.launch(data: scratch.data("listener"), [
            "--config", try policy(refused.peer, admitted.peer), "--transports", "lan", "--listen", "127.0.0.1:\(port)",
            "--subscribe", "SELECT * FROM cars",
        ])
        defer { listener.dismiss() }
        _ = try await refused.execute("INSERT INTO cars DOCUMENTS ({'_id': 'from-refused'})")
        _ = try await admitted.execute("INSERT INTO cars DOCUMENTS ({'_id': 'from-admitted'})")
        let (arrived, seen) = try await listener.wait(until: "SELECT * FROM cars", contains: "from-admitted")
        #expect(arrived, "\(seen)\n\(listener.log)")
        // The refused dialler started first and backs off between tries, so its next try can
        // come seconds after the admitted one got in: wait until the listener has decided on it.
        var decided = false
        for _ in 0..<300 where !decided {
            decided = try await decisions(listener)[refused.peer] != nil
            if !decided { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(decided, "the listener never heard from the refused dialler\n\(listener.log)")
        #expect(try await !listener.execute("SELECT * FROM cars").body.contains("from-refused"))
        try await check(listener, refused, admitted)
    }

    /// An operator's callback: what it was asked, and the dialler it is to treat as the refused one.
    final class Callback: Sendable {
        let asked = Mutex<[String]>([])
        let refused = Mutex("")
    }

    /// Runs `body` with an operator's callback listening on 127.0.0.1 (its port given), which
    /// answers each ask with `answer(peer asked about, the dialler to refuse)`.
    static func withCallback(
        answer: @escaping @Sendable (_ peer: String, _ refused: String) -> String, _ body: (_ port: Int, _ callback: Callback) async throws -> Void
    ) async throws {
        let callback = Callback()
        let router = Router()
        router.post("/admit") { request, _ -> Response in
            let text = String(buffer: try await request.body.collect(upTo: 1 << 16))
            callback.asked.withLock { $0.append(text) }
            let peer = (try? Value(json: text))?[path: "peer"]?.stringValue ?? ""
            let reply = answer(peer, callback.refused.withLock { $0 })
            return Response(status: .ok, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(string: reply)))
        }
        let quiet = Logger(label: "callback") { _ in SwiftLogNoOpLogHandler() }
        let (ports, port) = AsyncStream.makeStream(of: Int.self)
        let server = Application(
            router: router, configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0), serverName: "callback"),
            onServerRunning: { port.yield($0.localAddress?.port ?? 0) }, logger: quiet
        )
        let group = ServiceGroup(services: [server], logger: quiet)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            var iterator = ports.makeAsyncIterator()
            let callbackPort = try #require(await iterator.next())
            try await body(callbackPort, callback)
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }

    /// The listener's `admission` entries by peer, as `GET /v1/peers` answers.
    static func decisions(_ listener: RunningAgent) async throws -> [String: [String: Value]] {
        guard case .object(let graph)? = try await listener.request(.GET, "/v1/peers").json, case .array(let entries)? = graph["admission"] else { return [:] }
        var byPeer: [String: [String: Value]] = [:]
        for case .object(let entry) in entries { if let peer = entry["peer"]?.stringValue { byPeer[peer] = entry } }
        return byPeer
    }

    @Test("a deny rule by peer id keeps that peer out while another syncs; GET /v1/peers and `arcus peers` say who was refused and by which rule")
    func denyRule() async throws {
        let scratch = try MeshScratch("admission-deny")
        defer { scratch.remove() }
        try await Self.run(scratch, policy: { refused, _ in
            try Self.config(scratch, #""admission_deny": ["id:\#(refused.prefix(12))", "name:rogue-*"]"#)
        }) { listener, refused, admitted in
            let decisions = try await Self.decisions(listener)
            #expect(decisions[refused.peer]?["admitted"] == false, "\(decisions)")
            #expect(decisions[refused.peer]?["by"] == .string("deny id:\(refused.peer.prefix(12))"))
            #expect(decisions[admitted.peer]?["admitted"] == true)
            let table = try await ArcusProcess.run(["peers", "--agent", listener.url], environment: ["ARCUS_TOKEN": listener.token])
            #expect(table.status == 0, "\(table.standardError)")
            let line = table.standardOutput.split(separator: "\n").first { $0.hasPrefix("refused") && $0.contains(refused.peer) }
            #expect(line?.contains("deny id:") == true, "\(table.standardOutput)")
        }
    }

    @Test("the operator's callback decides: it is asked with the peer's id and transport, its refusal and reason show; an unreachable callback refuses (fails closed)")
    func callback() async throws {
        let scratch = try MeshScratch("admission-callback")
        defer { scratch.remove() }
        try await Self.withCallback(answer: { peer, refused in
            peer == refused ? #"{"allow": false, "reason": "not on the manifest"}"# : #"{"allow": true}"#
        }) { callbackPort, callback in
            try await Self.run(scratch, policy: { refused, _ in
                callback.refused.withLock { $0 = refused }
                return try Self.config(scratch, #""admission_callback": "http://127.0.0.1:\#(callbackPort)/admit", "admission_callback_timeout_s": 5"#)
            }) { listener, refused, admitted in
                let decisions = try await Self.decisions(listener)
                #expect(decisions[refused.peer]?["admitted"] == false, "\(decisions)")
                #expect(decisions[refused.peer]?["by"] == "admission_callback")
                #expect(decisions[refused.peer]?["reason"] == "not on the manifest")
                #expect(decisions[admitted.peer]?["admitted"] == true)
                let bodies = callback.asked.withLock { $0 }
                #expect(bodies.contains { $0.contains(admitted.peer) && $0.contains(#""transport":"lan""#) }, "\(bodies)")
            }
        }

        // Nothing listens at the callback's address now: every peer is refused, saying why.
        let closed = try freePort()
        let listening = try freePort()
        let dialler = try await RunningAgent.launch(data: scratch.data("dialler"), [
            "--config", scratch.config.path, "--transports", "lan", "--listen", "127.0.0.1:0", "--peer", "127.0.0.1:\(listening)",
        ])
        defer { dialler.dismiss() }
        let listener = try await RunningAgent.launch(data: scratch.data("closed"), [
            "--config", try Self.config(scratch, #""admission_callback": "http://127.0.0.1:\#(closed)/admit""#), "--transports", "lan",
            "--listen", "127.0.0.1:\(listening)", "--subscribe", "SELECT * FROM cars",
        ])
        defer { listener.dismiss() }
        _ = try await dialler.execute("INSERT INTO cars DOCUMENTS ({'_id': 'knocking'})")
        var decision: [String: Value]?
        for _ in 0..<300 where decision == nil {
            decision = try await Self.decisions(listener)[dialler.peer]
            if decision == nil { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(decision?["admitted"] == false, "\(listener.log)")
        let reason = decision?["reason"]?.stringValue ?? ""
        #expect(reason.contains("could not be asked"), "\(String(describing: decision))")
        #expect(try await !listener.execute("SELECT * FROM cars").body.contains("knocking"))
    }
}

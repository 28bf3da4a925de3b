import ArcusAgent
import ArcusMesh
import ArcusTestSupport
import Foundation
import Testing

/// Agents that join a mesh by certificate instead of a shared secret: `certificate_file` and
/// `authority_file` in --config. Runs in the "sync and the agent" pass (LAN TCP, static peers).
@Suite(.serialized)
struct AgentCertificateTests {
    /// An authority, and for each name a data directory whose identity it certified.
    struct CertifiedMesh {
        let scratch: MeshScratch
        let authority = MeshAuthority()
        var authorityFile: URL { scratch.directory.appendingPathComponent("authority.pub") }

        init() throws {
            scratch = try MeshScratch("certs")
            try Data((authority.publicKey.description + "\n").utf8).write(to: authorityFile)
        }

        /// Writes `name`'s certificate (for the identity of data directory `holder`, by default its
        /// own) and a config naming it; returns the config's path.
        func config(for name: String, certifying holder: String? = nil, expiresAt: Date? = nil) throws -> String {
            let identity = try PeerIdentity.load(orCreateAt: URL(fileURLWithPath: scratch.data(holder ?? name)).appendingPathComponent("identity"))
            let certificate = try authority.issue(to: identity.publicKey, name: name, permissions: .full, expiresAt: expiresAt)
            let certificateFile = scratch.directory.appendingPathComponent("\(name).cert")
            try Data(certificate.encoded).write(to: certificateFile)
            let config = scratch.directory.appendingPathComponent("\(name).json")
            try Data(#"{"certificate_file": "\#(certificateFile.path)", "authority_file": "\#(authorityFile.path)"}"#.utf8).write(to: config)
            return config.path
        }
    }

    @Test("two agents with certificates from one authority link over LAN and sync")
    func certifiedAgentsSync() async throws {
        let mesh = try CertifiedMesh()
        defer { mesh.scratch.remove() }
        try FileManager.default.createDirectory(atPath: mesh.scratch.data("a"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: mesh.scratch.data("b"), withIntermediateDirectories: true)
        let port = try freePort()
        let lan = ["--transports", "lan", "--subscribe", "SELECT * FROM cars"]
        let listener = try await RunningAgent.launch(data: mesh.scratch.data("b"), lan + ["--config", try mesh.config(for: "b"), "--listen", "127.0.0.1:\(port)"])
        defer { listener.dismiss() }
        let dialler = try await RunningAgent.launch(
            data: mesh.scratch.data("a"), lan + ["--config", try mesh.config(for: "a"), "--listen", "127.0.0.1:0", "--peer", "127.0.0.1:\(port)"]
        )
        defer { dialler.dismiss() }
        #expect(try await dialler.execute("INSERT INTO cars DOCUMENTS ({'_id': 'certified-1', 'make': 'volvo'})").status == 200)
        let (arrived, seen) = try await listener.wait(until: "SELECT * FROM cars", contains: "certified-1")
        #expect(arrived, "the write did not reach the certified peer: \(seen)\n\(dialler.log)\n\(listener.log)")
    }

    @Test("a certificate issued for another key, an expired one, or one without its authority stops the agent with a message that says what to do")
    func badCertificatesRefused() async throws {
        let mesh = try CertifiedMesh()
        defer { mesh.scratch.remove() }
        for name in ["mine", "other", "late"] {
            try FileManager.default.createDirectory(atPath: mesh.scratch.data(name), withIntermediateDirectories: true)
        }
        func refusal(_ data: String, _ config: String) async -> String {
            do {
                let agent = try await RunningAgent.launch(data: mesh.scratch.data(data), ["--config", config, "--transports", "lan", "--listen", "127.0.0.1:0"])
                await agent.halt()
                return "the agent started"
            } catch {
                return "\(error)"
            }
        }
        let stolen = await refusal("mine", try mesh.config(for: "mine", certifying: "other"))
        #expect(stolen.contains("status 2") && stolen.contains("not this agent") && stolen.contains("arcus mesh identity"), "\(stolen)")

        let expired = await refusal("late", try mesh.config(for: "late", expiresAt: Date().addingTimeInterval(-60)))
        #expect(expired.contains("status 2") && expired.contains("does not verify"), "\(expired)")

        let lonely = mesh.scratch.directory.appendingPathComponent("lonely.json")
        try Data(#"{"certificate_file": "\#(mesh.scratch.directory.path)/mine.cert"}"#.utf8).write(to: lonely)
        let alone = await refusal("mine", lonely.path)
        #expect(alone.contains("status 2") && alone.contains("authority_file"), "\(alone)")
    }
}

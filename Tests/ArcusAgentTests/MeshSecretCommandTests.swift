import ArcusAgent
import ArcusMesh
import ArcusTestSupport
import Foundation
import Testing

/// `arcus mesh secret FILE`, and weak shared secrets refused where a user would meet them: the
/// agent's start and `arcus doctor` (issue 17, finding 11). Runs the real `arcus` executable.
@Suite(.serialized)
struct MeshSecretCommandTests {
    static func scratch() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-mesh-secret-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test("`arcus mesh secret FILE` writes 32 random bytes, mode 0600, prints a JSON line and what to do next, and refuses to overwrite")
    func secretCommand() async throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("mesh.secret").path

        let made = try await ArcusProcess.run(["mesh", "secret", file])
        #expect(made.status == 0, "\(made.standardError)")
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: file)))
        #expect(bytes.count == 32)
        #expect(try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int == 0o600)
        let secret = try MeshSecret(bytes: bytes)
        let lines = made.standardOutput.split(separator: "\n")
        #expect(lines.count == 1, "\(made.standardOutput)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(made.standardOutput.utf8)) as? [String: Any])
        #expect(summary["mesh_secret_file"] as? String == file && summary["bytes"] as? Int == 32 && summary["mode"] as? String == "0600")
        #expect(summary["mesh_id"] as? String == MeshCredential.sharedSecret(secret).meshHash)
        #expect(made.standardError.contains("every device") && made.standardError.contains("mesh_secret_file"), "\(made.standardError)")

        let again = try await ArcusProcess.run(["mesh", "secret", file])
        #expect(again.status == 2)
        #expect(again.standardError.contains("already exists"), "\(again.standardError)")
        #expect(again.standardOutput.isEmpty)
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: file))) == bytes, "the existing secret was replaced")

        let other = directory.appendingPathComponent("other.secret").path
        #expect(try await ArcusProcess.run(["mesh", "secret", other]).status == 0)
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: other))) != bytes)
    }

    @Test("a 16-byte ASCII secret, a short passphrase and a 40-character English one stop the agent at start and fail `arcus doctor`, both saying to run `arcus mesh secret`",
          arguments: ["Sixteen-byte-key", "correct horse battery staple", "the cat sat on the mat with a big red hat"])
    func weakSecretRefused(passphrase: String) async throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let secret = directory.appendingPathComponent("secret")
        #expect(try SecretFile.create(Array(passphrase.utf8), at: secret.path))
        let config = directory.appendingPathComponent("agent.json")
        try Data(#"{"mesh_secret_file": "\#(secret.path)"}"#.utf8).write(to: config)
        let data = directory.appendingPathComponent("data").path

        let agent = try await ArcusProcess.run([
            "agent", "--data", data, "--config", config.path, "--transports", "lan", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
        ])
        #expect(agent.status == 2, "the agent started with \(passphrase): \(agent.standardError)")
        #expect(agent.standardError.contains("too easy to guess") && agent.standardError.contains("arcus mesh secret"), "\(agent.standardError)")
        #expect(agent.standardOutput.isEmpty, "\(agent.standardOutput)")

        let doctor = try await ArcusProcess.run(["doctor", "--data", data, "--config", config.path, "--transports", "loopback"])
        #expect(doctor.status == 1, "\(doctor.standardOutput)")
        let mesh = doctor.standardOutput.split(separator: "\n").drop { !$0.hasPrefix("mesh") }.prefix(3).joined(separator: "\n")
        #expect(mesh.contains("failure") && mesh.contains("too easy to guess") && mesh.contains("arcus mesh secret"), "\(doctor.standardOutput)")
    }

    @Test("two agents given a secret from `arcus mesh secret` link over LAN and sync")
    func generatedSecretSyncs() async throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let secret = directory.appendingPathComponent("mesh.secret").path
        #expect(try await ArcusProcess.run(["mesh", "secret", secret]).status == 0)
        let config = directory.appendingPathComponent("agent.json")
        try Data(#"{"mesh_secret_file": "\#(secret)"}"#.utf8).write(to: config)
        let lan = ["--config", config.path, "--transports", "lan", "--subscribe", "SELECT * FROM cars"]
        let port = try freePort()
        let listener = try await RunningAgent.launch(data: directory.appendingPathComponent("b").path, lan + ["--listen", "127.0.0.1:\(port)"])
        defer { listener.dismiss() }
        let dialler = try await RunningAgent.launch(
            data: directory.appendingPathComponent("a").path, lan + ["--listen", "127.0.0.1:0", "--peer", "127.0.0.1:\(port)"]
        )
        defer { dialler.dismiss() }
        #expect(try await dialler.execute("INSERT INTO cars DOCUMENTS ({'_id': 'secret-1', 'make': 'saab'})").status == 200)
        let (arrived, seen) = try await listener.wait(until: "SELECT * FROM cars", contains: "secret-1")
        #expect(arrived, "the write did not reach the other agent: \(seen)\n\(dialler.log)\n\(listener.log)")
    }
}

import ArcusCRDT
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The `arcus` CLI and the API's token, end to end against an agent process: as the agent's
/// user nobody handles the token; without the copy the agent keeps for that user, the CLI says
/// how to give it; another local user gets nowhere; a stranger listening on the agent's port is
/// not handed the token.
@Suite("arcus CLI: finding the agent's token")
struct AgentTokenCLITests {
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-token-cli-\(UUID().uuidString)").path
    var data: String { scratch + "/data" }
    /// The agent's and the CLI's XDG_STATE_HOME, where the agent keeps its user's copy.
    var state: String { scratch + "/state" }

    @Test("`arcus exec --agent` and every other command work with no token option as the agent's user; with that user's copy gone they fail saying how to give the token, and --token-file or ARCUS_TOKEN then work")
    func sameUserNeedsNothing() async throws {
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let environment = ["XDG_STATE_HOME": state]
        let agent = try await RunningAgent.launch(data: data, environment: environment)
        defer { agent.dismiss() }
        let url = agent.url
        let exec = try await ArcusProcess.run(["exec", "--agent", url, "INSERT INTO cars DOCUMENTS ({'_id': 'a'})"], environment: environment)
        #expect(exec.status == 0, "\(exec.standardError)")
        #expect(try Value(json: exec.standardOutput) == ["items": [], "mutatedDocumentIDs": ["a"], "commit_id": 1])
        for command in [
            ["status", "--agent", url, "--json"], ["peers", "--agent", url], ["subscribe", "--agent", url, "SELECT * FROM cars"],
            ["attachment", "list", "--agent", url], ["status", "--page", "--agent", url],
        ] {
            let outcome = try await ArcusProcess.run(command, environment: environment)
            #expect(outcome.status == 0, "\(command): \(outcome.standardError)")
        }

        let copy = "\(state)/arcus/agents/localhost:\(agent.port)"
        try FileManager.default.removeItem(atPath: copy)
        let tokenFile = data + "/api-token"
        for command in [["exec", "--agent", url, "INSERT INTO cars DOCUMENTS ({'_id': 'b'})"], ["status", "--agent", url], ["status", "--page", "--agent", url]] {
            let refused = try await ArcusProcess.run(command, environment: environment)
            #expect(refused.status == 2, "\(command): \(refused.standardError)")
            for says in ["--token-file", "ARCUS_TOKEN", "runs as you", copy] {
                #expect(refused.standardError.contains(says), "\(command): no \(says) in \(refused.standardError)")
            }
            #expect(refused.standardOutput.isEmpty)
        }
        let refused = try await ArcusProcess.run(["exec", "--agent", url, "SELECT * FROM cars"], environment: environment)
        #expect(refused.standardError.contains(tokenFile), "the agent's answer names its token file: \(refused.standardError)")

        let withFile = try await ArcusProcess.run(["exec", "--agent", url, "--token-file", tokenFile, "INSERT INTO cars DOCUMENTS ({'_id': 'c'})"], environment: environment)
        #expect(withFile.status == 0, "\(withFile.standardError)")
        let withVariable = try await ArcusProcess.run(["exec", "--agent", url, "SELECT _id FROM cars ORDER BY _id"],
                                                             environment: environment.merging(["ARCUS_TOKEN": agent.token]) { $1 })
        #expect(withVariable.status == 0, "\(withVariable.standardError)")
        // 'b' was never written.
        #expect(try Value(json: withVariable.standardOutput) == ["items": [["_id": "a"], ["_id": "c"]], "mutatedDocumentIDs": []], "\(withVariable.standardOutput)")

        let wrong = try await ArcusProcess.run(["exec", "--agent", url, "SELECT * FROM cars"],
                                                      environment: environment.merging(["ARCUS_TOKEN": String(repeating: "7", count: 64)]) { $1 })
        #expect(wrong.status == 2 && wrong.standardError.contains("ARCUS_TOKEN is not this agent's"), "\(wrong.standardError)")
        let malformed = try await ArcusProcess.run(["exec", "--agent", url, "SELECT * FROM cars"], environment: environment.merging(["ARCUS_TOKEN": "secret"]) { $1 })
        #expect(malformed.status == 2 && malformed.standardError.contains("64 hex digits"), "\(malformed.standardError)")
        let missingFile = try await ArcusProcess.run(["exec", "--agent", url, "--token-file", scratch + "/nothing", "SELECT * FROM cars"], environment: environment)
        #expect(missingFile.status == 2 && missingFile.standardError.contains("cannot read the token file"), "\(missingFile.standardError)")
    }

    @Test("another local user can use the API neither through the CLI nor with the agent's token file", .enabled(if: geteuid() == 0, "runs the CLI as user nobody, which only root may"))
    func anotherUserGetsNowhere() async throws {
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        // The agent keeps its user's copy where root's copies go (/root, mode 0700).
        let agent = try await RunningAgent.launch(data: data)
        defer { agent.dismiss() }
        let nobody: UInt32 = 65534
        let write = ["exec", "--agent", agent.url, "INSERT INTO cars DOCUMENTS ({'_id': 'nobody'})"]
        let plain = try await ArcusProcess.run(write, asUser: nobody)
        #expect(plain.status == 2, "\(plain.standardError)")
        #expect(plain.standardError.contains("runs as user root") && plain.standardError.contains("only that user (or root) may read its token"), "\(plain.standardError)")
        let withFile = try await ArcusProcess.run(["exec", "--agent", agent.url, "--token-file", data + "/api-token", "INSERT INTO cars DOCUMENTS ({'_id': 'nobody'})"], asUser: nobody)
        #expect(withFile.status == 2 && withFile.standardError.contains("cannot read the token file"), "\(withFile.standardError)")
        let guessed = try await ArcusProcess.run(write, environment: ["ARCUS_TOKEN": String(repeating: "0", count: 64)], asUser: nobody)
        #expect(guessed.status == 2 && guessed.standardError.contains("not this agent's"), "\(guessed.standardError)")
        #expect(try await agent.execute("SELECT * FROM cars").json == ["items": [], "mutatedDocumentIDs": []])
        // As root, `sudo arcus …`, it works.
        let root = try await ArcusProcess.run(["exec", "--agent", agent.url, "SELECT * FROM cars"])
        #expect(root.status == 0, "\(root.standardError)")
    }

    @Test("a process of another user listening on an agent's port is not sent the token the CLI keeps for that port", .enabled(if: geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"), "runs a listener as user nobody, which only root may"))
    func squatterIsNotSentTheToken() async throws {
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        // As user nobody: listen on a free port of 127.0.0.1, print it, then print the first request's head.
        let script = """
            import socket, sys
            server = socket.socket(); server.bind(("127.0.0.1", 0)); server.listen(1)
            print(server.getsockname()[1], flush=True)
            connection, _ = server.accept(); head = b""
            while b"\\r\\n\\r\\n" not in head:
                piece = connection.recv(4096)
                if not piece: break
                head += piece
            print(head.decode("latin-1"), flush=True)
            connection.sendall(b'HTTP/1.1 401 Unauthorized\\r\\nContent-Type: application/json\\r\\nContent-Length: 14\\r\\nConnection: close\\r\\n\\r\\n{"error":"no"}')
            connection.close()
            """
        let output = URL(fileURLWithPath: scratch + "/squatter.out")
        FileManager.default.createFile(atPath: output.path, contents: nil)
        let squatter = Process()
        squatter.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        squatter.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "--", "/usr/bin/python3", "-c", script]
        squatter.standardOutput = try FileHandle(forWritingTo: output)
        try squatter.run()
        defer { if squatter.isRunning { squatter.terminate() }; squatter.waitUntilExit() }
        var port = 0
        for _ in 0..<600 where port == 0 {
            port = Int(((try? String(contentsOf: output, encoding: .utf8)) ?? "").split(separator: "\n").first ?? "") ?? 0
            if port == 0 { try await Task.sleep(for: .milliseconds(50)) }
        }
        try #require(port > 0, "the listener never said its port")

        // This user's copy of a token for that port, as an agent of this user's left it there.
        let agents = state + "/arcus/agents"
        try FileManager.default.createDirectory(atPath: agents, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let token = String(repeating: "5a", count: 32)
        FileManager.default.createFile(atPath: "\(agents)/localhost:\(port)", contents: Data((token + "\n").utf8), attributes: [.posixPermissions: 0o600])
        let outcome = try await ArcusProcess.run(["status", "--agent", "http://127.0.0.1:\(port)"], environment: ["XDG_STATE_HOME": state])
        #expect(outcome.status == 2, "\(outcome.standardError)")
        #expect(outcome.standardError.contains("runs as user nobody"), "\(outcome.standardError)")
        squatter.waitUntilExit()
        let received = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        #expect(received.contains("GET /v1/status"), "the listener received no request: \(received)")
        #expect(!received.contains(token) && !received.lowercased().contains("authorization"), "the token was sent to another user's listener: \(received)")
    }
}

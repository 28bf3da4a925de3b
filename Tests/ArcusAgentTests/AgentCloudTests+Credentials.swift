import ArcusTestSupport
import Foundation
import Testing

/// Relay URLs carry passwords and tokens (`nats://user:password@host`, `nats://token@host`):
/// nothing the agent or the CLI prints may show them. Real nats-servers that want them.
extension AgentCloudTests {
    @Test("a relay password or token never appears in doctor, the ready line, status, metrics, the status page, logs or errors")
    func relayCredentialsAreNeverPrinted() async throws {
        let (password, token, wrongPassword) = ("pw-Vermilion-4711", "tok-Kestrel-0815", "pw-Wrong-9999")
        let secrets = [password, token, wrongPassword]
        let withPassword = try NATSServerProcess.start(jetStream: true, extraArguments: ["--user", "arcus", "--pass", password])
        let withToken = try NATSServerProcess.start(jetStream: false, extraArguments: ["--auth", token])
        let urls = (
            password: "nats://arcus:\(password)@127.0.0.1:\(withPassword.port)",
            token: "nats://\(token)@127.0.0.1:\(withToken.port)",
            wrong: "nats://arcus:\(wrongPassword)@127.0.0.1:\(withPassword.port)"
        )
        let scratch = try MeshScratch("cloud-credentials")
        defer { scratch.remove() }
        var printed: [(what: String, text: String)] = []

        // arcus doctor: the table and JSON, with each URL; a good one must really have connected.
        for (name, url) in [("password", urls.password), ("token", urls.token), ("wrong password", urls.wrong)] {
            for json in [false, true] {
                let doctor = try await ArcusProcess.run(
                    ["doctor", "--data", scratch.data("d"), "--config", scratch.config.path, "--transports", "cloud", "--cloud", url] + (json ? ["--json"] : [])
                )
                printed.append(("doctor (\(name)\(json ? ", json" : ""))", doctor.standardOutput + doctor.standardError))
                if name != "wrong password" && !json {
                    #expect(doctor.standardOutput.contains("127.0.0.1:") && doctor.standardOutput.contains("answers"), "\(doctor.standardOutput)")
                }
            }
        }
        // A URL that does not parse is shown in the error, without what precedes its @.
        let malformed = try await ArcusProcess.run(
            ["doctor", "--data", scratch.data("d"), "--transports", "cloud", "--cloud", "nats://arcus:\(password)@127.0.0.1"]
        )
        #expect(malformed.status == 2 && malformed.standardError.contains("is not a relay URL"), "\(malformed.standardError)")
        printed.append(("doctor (malformed URL)", malformed.standardOutput + malformed.standardError))

        // Agents: one that connects with a password, one with a token, one refused (it logs the
        // relay's refusal). Their ready lines, status (API, CLI, page), metrics and logs.
        var agents: [(String, RunningAgent)] = []
        for (name, url) in [("password", urls.password), ("token", urls.token), ("wrong password", urls.wrong)] {
            let agent = try await RunningAgent.launch(
                data: scratch.data("agent-\(agents.count)"), ["--config", scratch.config.path, "--transports", "cloud", "--cloud", url]
            )
            agents.append((name, agent))
        }
        defer { for (_, agent) in agents { _ = agent.stop() } }
        // The refused agent says so after twice the connect timeout (2 s); wait for that line.
        let refused = agents[2].1
        for _ in 0..<100 where !refused.log.contains("not connected") { try await Task.sleep(for: .milliseconds(100)) }
        #expect(refused.log.contains("not connected"), "the refused agent never said so:\n\(refused.log)")
        for (name, agent) in agents {
            printed.append(("ready line (\(name))", agent.printed))
            for path in ["/v1/status", "/metrics", "/", "/v1/peers"] {
                printed.append(("GET \(path) (\(name))", try await agent.request(.GET, path).body))
            }
            let status = try await ArcusProcess.run(["status", "--agent", agent.url])
            let statusJSON = try await ArcusProcess.run(["status", "--agent", agent.url, "--json"])
            printed.append(("arcus status (\(name))", status.standardOutput + status.standardError + statusJSON.standardOutput))
        }
        for (name, agent) in agents {
            #expect(await agent.halt() == 0)
            printed.append(("log (\(name))", agent.log))
        }
        // An agent whose --cloud does not parse stops with an error that names it, without secrets.
        let misconfigured = try await ArcusProcess.run(
            ["agent", "--data", scratch.data("bad"), "--transports", "cloud", "--cloud", "nats://arcus:\(password)@127.0.0.1", "--http", "127.0.0.1:0"]
        )
        #expect(misconfigured.status == 2, "\(misconfigured.standardError)")
        printed.append(("agent error (malformed URL)", misconfigured.standardOutput + misconfigured.standardError))

        for (what, text) in printed {
            for secret in secrets {
                #expect(!text.contains(secret), "\(what) shows a relay secret:\n\(text.prefix(3_000))")
            }
        }
        #expect(printed.allSatisfy { !$0.text.isEmpty || $0.what.hasPrefix("log") }, "something printed nothing at all")
    }
}

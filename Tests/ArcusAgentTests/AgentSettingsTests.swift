import ArcusCRDT
import ArcusTestSupport
import Foundation
import Glibc
import Testing

/// `SHOW` and `ALTER SYSTEM` through the agent's HTTP API (what `arcus exec --agent` sends):
/// settings change while the agent runs, are kept in the data directory over the configuration
/// file, and `RESET` brings the file's value back.
@Suite("arcus agent: SHOW and ALTER SYSTEM", .serialized)
struct AgentSettingsTests {
    /// The rows of a SHOW or ALTER SYSTEM reply, by setting name.
    static func rows(_ reply: RunningAgent.Reply) -> [String: Value] {
        guard case .array(let items)? = reply.json?[path: ["items"]] else { return [:] }
        var rows: [String: Value] = [:]
        for item in items { if case .string(let name)? = item[path: ["name"]] { rows[name] = item } }
        return rows
    }

    /// How many times the agent logged that ALTER SYSTEM changed a setting.
    static func changeLines(_ agent: RunningAgent) -> [Substring] {
        agent.log.split(separator: "\n").filter { $0.contains("setting changed by ALTER SYSTEM") }
    }

    @Test("SHOW ALL lists every setting; ALTER SYSTEM changes the log level live, persists over the file across a restart, and RESET brings the file's value back")
    func showAlterReset() async throws {
        let scratch = try MeshScratch("settings")
        defer { scratch.remove() }
        let config = scratch.directory.appendingPathComponent("agent.toml")
        try Data("durability = \"normal\"\n".utf8).write(to: config)
        let data = scratch.data("a")
        var agent = try await RunningAgent.launch(data: data, ["--config", config.path])
        defer { agent.dismiss() }

        let all = try await agent.execute("SHOW ALL")
        #expect(all.status == 200, "\(all.body)")
        let shown = Self.rows(all)
        #expect(Set(shown.keys) == ["log_level", "durability", "transports", "pending_handshakes", "ble_links", "lazy_push_hold_ms", "tombstone_lifetime_s"], "\(all.body)")
        #expect(shown["durability"] == ["_id": "durability", "name": "durability", "value": "normal", "default": "full", "source": "config", "applies": "live"])
        #expect(shown["log_level"] == ["_id": "log_level", "name": "log_level", "value": "info", "default": "info", "source": "default", "applies": "live"])
        #expect(shown["pending_handshakes"]?[path: ["applies"]] == "restart")
        #expect(shown["lazy_push_hold_ms"] == ["_id": "lazy_push_hold_ms", "name": "lazy_push_hold_ms", "value": 200, "default": 200, "source": "default", "applies": "restart"])
        #expect(Self.rows(try await agent.execute("SHOW")) == shown, "SHOW is SHOW ALL")

        // Bad names and values are refused with what is accepted, and change nothing.
        let unknown = try await agent.execute("ALTER SYSTEM SET log_levle = 'debug'")
        #expect(unknown.status == 400)
        #expect(unknown.error?.contains("unknown setting \"log_levle\": the settings are log_level, durability, transports, pending_handshakes, ble_links, lazy_push_hold_ms, tombstone_lifetime_s") == true, "\(unknown.body)")
        let badValue = try await agent.execute("ALTER SYSTEM SET durability = 'sometimes'")
        #expect(badValue.status == 400)
        #expect(badValue.error?.contains("durability cannot be \"sometimes\": it takes full") == true, "\(badValue.body)")
        let badNumber = try await agent.execute("ALTER SYSTEM SET pending_handshakes = 0")
        #expect(badNumber.error?.contains("a whole number from 1 to 4096") == true, "\(badNumber.body)")
        let syntax = try await agent.execute("ALTER SYSTEM SET log_level 'debug'")
        #expect(syntax.error?.contains("line 1, column 28: expected '=' or TO") == true, "\(syntax.body)")
        #expect(Self.rows(try await agent.execute("SHOW ALL")) == shown)
        #expect(!FileManager.default.fileExists(atPath: data + "/settings.json"))

        // Live: at level error the notice each change logs is left out, from the change on.
        let quiet = try await agent.execute("ALTER SYSTEM SET log_level = 'ERROR'")
        #expect(Self.rows(quiet)["log_level"]?[path: ["value"]] == "error", "\(quiet.body)")
        #expect(Self.rows(quiet)["log_level"]?[path: ["source"]] == "alter system", "\(quiet.body)")
        let durable = try await agent.execute("ALTER SYSTEM SET durability TO full")
        #expect(durable.status == 200, "\(durable.body)")
        #expect(try await agent.request(.GET, "/v1/status").json?[path: ["durability"]] == "full")
        _ = try await agent.execute("ALTER SYSTEM SET log_level = info")
        let lines = Self.changeLines(agent)
        #expect(lines.count == 1 && lines.first?.contains("log_level") == true, "only the change back to info is logged:\n\(agent.log)")
        _ = try await agent.execute("ALTER SYSTEM SET log_level = 'warning'")
        _ = try await agent.execute("ALTER SYSTEM SET pending_handshakes = 16")

        // Kept across a restart, over the configuration file.
        #expect(await agent.halt() == 0)
        agent = try await RunningAgent.launch(data: data, ["--config", config.path])
        let restarted = Self.rows(try await agent.execute("SHOW ALL"))
        #expect(restarted["log_level"]?[path: ["value"]] == "warning")
        #expect(restarted["log_level"]?[path: ["source"]] == "alter system")
        #expect(restarted["durability"]?[path: ["value"]] == "full")
        #expect(restarted["pending_handshakes"]?[path: ["value"]] == 16)
        #expect(try await agent.request(.GET, "/v1/status").json?[path: ["durability"]] == "full")

        // RESET: the file's value again, now and at the next start.
        let reset = try await agent.execute("ALTER SYSTEM RESET durability")
        #expect(Self.rows(reset)["durability"]?[path: ["value"]] == "normal", "\(reset.body)")
        #expect(Self.rows(reset)["durability"]?[path: ["source"]] == "config", "\(reset.body)")
        #expect(try await agent.request(.GET, "/v1/status").json?[path: ["durability"]] == "normal")
        let resetAll = try await agent.execute("ALTER SYSTEM RESET ALL")
        #expect(Set(Self.rows(resetAll).keys) == ["log_level", "pending_handshakes"], "\(resetAll.body)")
        #expect(!FileManager.default.fileExists(atPath: data + "/settings.json"))
        #expect(await agent.halt() == 0)
        agent = try await RunningAgent.launch(data: data, ["--config", config.path])
        #expect(Self.rows(try await agent.execute("SHOW ALL")) == shown)
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    static func accepts(_ port: Int) -> Bool {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// Whether `agent`'s presence graph has a LAN link.
    static func hasLANLink(_ agent: RunningAgent) async -> Bool {
        guard case .array(let links)? = (try? await agent.request(.GET, "/v1/peers"))?.json?[path: ["links"]] else { return false }
        return links.contains { $0[path: ["transport"]] == "lan" }
    }

    @Test("turning LAN off closes its port and its peer's links while the agent runs; on again, it listens on that port and the peer syncs again; a transport that cannot start changes nothing")
    func lanOffAndOn() async throws {
        let scratch = try MeshScratch("settings-lan")
        defer { scratch.remove() }
        let port = try freePort()
        let lan = ["--config", scratch.config.path, "--transports", "lan", "--no-mdns", "--subscribe", "SELECT * FROM cars"]
        let listener = try await RunningAgent.launch(data: scratch.data("b"), lan + ["--listen", "127.0.0.1:\(port)"])
        defer { listener.dismiss() }
        let dialler = try await RunningAgent.launch(data: scratch.data("a"), lan + ["--listen", "127.0.0.1:0", "--peer", "127.0.0.1:\(port)"])
        defer { dialler.dismiss() }
        _ = try await dialler.execute("INSERT INTO cars DOCUMENTS ({'_id': 'before'})")
        #expect(try await listener.wait(until: "SELECT * FROM cars", contains: "before").found, "\(dialler.log)\n\(listener.log)")
        #expect(Self.accepts(port))

        // A transport that cannot start here (no relay configured) is refused; LAN runs on.
        let cloud = try await listener.execute("ALTER SYSTEM SET transports = 'lan,cloud'")
        #expect(cloud.status == 400)
        #expect(cloud.error?.contains("the cloud transport cannot start: --transports cloud needs the relay") == true, "\(cloud.body)")
        #expect(cloud.error?.contains("the transports are unchanged") == true, "\(cloud.body)")
        #expect(Self.rows(try await listener.execute("SHOW transports"))["transports"]?[path: ["value"]] == "lan")
        #expect(Self.accepts(port))

        let off = try await listener.execute("ALTER SYSTEM SET transports = 'loopback'")
        #expect(off.status == 200, "\(off.body)")
        #expect(!Self.accepts(port), "LAN still listens on \(port)")
        #expect(try await listener.request(.GET, "/v1/status").json?[path: ["transports"]] == ["loopback"])
        var gone = false
        for _ in 0..<600 where !gone {
            gone = await !Self.hasLANLink(dialler)
            if !gone { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(gone, "the dialler still has a LAN link to the listener")
        _ = try await dialler.execute("INSERT INTO cars DOCUMENTS ({'_id': 'while-off'})")

        let on = try await listener.execute("ALTER SYSTEM SET transports = 'lan'")
        #expect(on.status == 200, "\(on.body)")
        #expect(Self.accepts(port), "LAN does not listen on \(port) again")
        #expect(try await listener.request(.GET, "/v1/status").json?[path: ["transports"]] == ["lan"])
        #expect(try await listener.wait(until: "SELECT * FROM cars", contains: "while-off").found, "\(dialler.log)\n\(listener.log)")
        #expect(await Self.hasLANLink(dialler))
    }
}

/// `arcus exec --data DIR` on settings: no agent runs, so they are what the agent will start with.
@Suite("arcus exec --data: SHOW and ALTER SYSTEM")
struct OfflineSettingsTests {
    @Test("SHOW and ALTER SYSTEM on a data directory change what the agent starts with; a bad value leaves no file")
    func offlineThenAgent() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-settings-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        func exec(_ statement: String) async throws -> ArcusProcess.Outcome { try await ArcusProcess.run(["exec", "--data", data, statement]) }

        let bad = try await exec("ALTER SYSTEM SET log_level = 'loud'")
        #expect(bad.status == 2)
        #expect(bad.standardError.contains("log_level cannot be \"loud\": it takes one of trace, debug, info, notice, warning, error, critical"), "\(bad.standardError)")
        #expect(!FileManager.default.fileExists(atPath: data + "/settings.json"))

        let set = try await exec("ALTER SYSTEM SET log_level = 'debug'")
        #expect(set.status == 0, "\(set.standardError)")
        #expect(try Value(json: set.standardOutput) == ["items": [[
            "_id": "log_level", "name": "log_level", "value": "debug", "default": "info", "source": "alter system", "applies": "agent start",
        ]], "mutatedDocumentIDs": []])
        let shown = try await exec("SHOW log_level")
        #expect(try Value(json: shown.standardOutput)[path: ["items"]] == (try Value(json: set.standardOutput))[path: ["items"]])

        let agent = try await RunningAgent.launch(data: data)
        defer { agent.dismiss() }
        let live = try await agent.execute("SHOW log_level")
        #expect(AgentSettingsTests.rows(live)["log_level"]?[path: ["value"]] == "debug", "\(live.body)")
        #expect(AgentSettingsTests.rows(live)["log_level"]?[path: ["applies"]] == "live", "\(live.body)")
    }
}

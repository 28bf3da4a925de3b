import ArcusBluetooth
@testable import ArcusAgent
import Foundation
import Testing

/// The agent's configuration file (TOML or JSON) and its ARCUS_* environment overrides.
final class ConfigurationFileTests {
    /// The files each test writes, removed once it ends (each test has an instance of its own).
    private let files = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-config-\(UUID().uuidString)")

    deinit { try? FileManager.default.removeItem(at: files) }

    private func write(_ text: String, named name: String = "arcus.toml") throws -> String {
        let directory = files.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent(name)
        try Data(text.utf8).write(to: file)
        return file.path
    }

    private func resolve(_ file: String?, environment: [String: String] = [:], transports: String? = nil) throws(CommandError) -> AgentConfiguration {
        try AgentConfiguration.resolve(
            dataDirectory: "/tmp/unused", configFile: file, name: nil, http: nil, listen: nil, transports: transports,
            peers: [], subscriptions: [], environment: environment
        )
    }

    @Test("Hardware/arcus.toml documents every option, and reads with every key uncommented")
    func exampleDocumentsEveryKey() throws {
        let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Hardware/arcus.toml")
        let text = try String(contentsOf: example, encoding: .utf8)
        for key in AgentConfiguration.fileKeys {
            #expect(text.contains("\n# \(key) = "), "Hardware/arcus.toml does not document \(key)")
        }
        // As shipped, everything is a default.
        let defaults = try resolve(try write(text))
        #expect(defaults.transports == [.loopback] && defaults.role == .peer && defaults.cloud.storeAndForward)
        // Uncommented, every example value reads (certificate and secret are exclusive only when loaded).
        let uncommented = text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.hasPrefix("# ") && line.contains(" = ") && !line.hasPrefix("# -") ? String(line.dropFirst(2)) : String(line)
        }.joined(separator: "\n")
        let all = try resolve(try write(uncommented))
        #expect(all.name == "pump-3")
        #expect(all.role == .peer)
        #expect(all.cloud.urls == ["nats://127.0.0.1:4222"])
        #expect(all.cloud.storedFramesMaxBytes == 268_435_456)
        #expect(all.blePSM == 128)
        #expect(all.bleAdapter == .index(0))
    }

    @Test("TOML values read; the command line wins over the environment, which wins over the file")
    func precedence() throws {
        let file = try write("""
            name = "from-file"
            transports = ["lan"]
            http = "127.0.0.1:4800"
            cloud = ["nats://127.0.0.1:4222"]
            cloud_stored_max_age_s = 600
            """)
        let fromFile = try resolve(file)
        #expect(fromFile.name == "from-file" && fromFile.transports == [.lan] && fromFile.http.port == 4800)
        #expect(fromFile.cloud.storedFramesMaxAge == .seconds(600))

        let environment = ["ARCUS_NAME": "from-env", "ARCUS_TRANSPORTS": "lan, cloud", "ARCUS_CLOUD_STORE_AND_FORWARD": "false",
                           "ARCUS_SUBSCRIBE": "SELECT * FROM a WHERE x IN (1, 2)\nSELECT * FROM b", "ARCUS_TEST_SEED": "7"]
        let fromEnvironment = try resolve(file, environment: environment)
        #expect(fromEnvironment.name == "from-env" && fromEnvironment.transports == [.lan, .cloud])
        #expect(!fromEnvironment.cloud.storeAndForward && fromEnvironment.http.port == 4800)
        #expect(fromEnvironment.subscriptions == ["SELECT * FROM a WHERE x IN (1, 2)", "SELECT * FROM b"])

        let fromCommandLine = try resolve(file, environment: environment, transports: "loopback")
        #expect(fromCommandLine.transports == [.loopback])
        // The environment alone, without a file, also configures.
        #expect(try resolve(nil, environment: ["ARCUS_ROLE": "hub"]).role == .hub)
    }

    @Test("mDNS is on by default, and off with mdns = false, ARCUS_MDNS=false or --no-mdns")
    func mdns() throws {
        func mdns(file: String?, environment: [String: String] = [:], noMDNS: Bool = false) throws(CommandError) -> Bool {
            try AgentConfiguration.resolve(
                dataDirectory: "/tmp/unused", configFile: file, name: nil, http: nil, listen: nil, transports: "lan",
                peers: [], noMDNS: noMDNS, subscriptions: [], environment: environment
            ).mdns
        }
        #expect(try mdns(file: nil))
        #expect(try !mdns(file: try write("mdns = false")))
        #expect(try !mdns(file: nil, environment: ["ARCUS_MDNS": "false"]))
        #expect(try !mdns(file: try write("mdns = true"), noMDNS: true))
        #expect(throws: CommandError.self) { try mdns(file: nil, environment: ["ARCUS_MDNS": "maybe"]) }
    }

    @Test("the clock skew allowance reads from the file, the environment and the command line, a week by default")
    func clockSkewAllowance() throws {
        func allowance(file: String?, environment: [String: String] = [:], option: String? = nil) throws(CommandError) -> Duration {
            try AgentConfiguration.resolve(
                dataDirectory: "/tmp/unused", configFile: file, name: nil, http: nil, listen: nil, transports: nil,
                peers: [], subscriptions: [], clockSkewAllowance: option, environment: environment
            ).clockSkewAllowance
        }
        #expect(try allowance(file: nil) == .seconds(7 * 86_400))
        let file = try write("clock_skew_allowance = \"36h\"")
        #expect(try allowance(file: file) == .seconds(36 * 3600))
        #expect(try allowance(file: file, environment: ["ARCUS_CLOCK_SKEW_ALLOWANCE": "90m"]) == .seconds(90 * 60))
        #expect(try allowance(file: file, environment: ["ARCUS_CLOCK_SKEW_ALLOWANCE": "90m"], option: "0s") == .zero)
        #expect(try allowance(file: nil, option: "366d") == .seconds(366 * 86_400))
        for bad in ["", "d", "7", "7w", "-1d", "367d", "1.5h", "99999999999999999d"] {
            #expect(throws: CommandError.self, "\(bad)") { try allowance(file: nil, option: bad) }
        }
        #expect(throws: CommandError.self) { try allowance(file: try write("clock_skew_allowance = 7")) }
    }

    @Test("durability reads from the file, the environment and the command line, full by default; another value is refused naming full and normal")
    func durability() throws {
        func durability(file: String?, environment: [String: String] = [:], option: String? = nil) throws(CommandError) -> Durability {
            try AgentConfiguration.resolve(
                dataDirectory: "/tmp/unused", configFile: file, name: nil, http: nil, listen: nil, transports: nil,
                peers: [], subscriptions: [], durability: option, environment: environment
            ).durability
        }
        #expect(try durability(file: nil) == .full)
        #expect(try durability(file: try write("name = \"a\"")) == .full)
        let file = try write("durability = \"normal\"")
        #expect(try durability(file: file) == .normal)
        #expect(try durability(file: try write("{\"durability\": \"normal\"}", named: "agent.json")) == .normal)
        #expect(try durability(file: file, environment: ["ARCUS_DURABILITY": "full"]) == .full)
        #expect(try durability(file: nil, environment: ["ARCUS_DURABILITY": "normal"]) == .normal)
        #expect(try durability(file: file, environment: ["ARCUS_DURABILITY": "normal"], option: "full") == .full)
        #expect(try durability(file: nil, option: "FULL") == .full)
        #expect(Durability.full.synchronous == .full && Durability.normal.synchronous == .normal)
        let refusals: [(file: String?, environment: [String: String], option: String?, says: String)] = [
            (nil, [:], "fast", "--durability must be full"),
            (nil, [:], "", "--durability must be full"),
            (try write("durability = \"off\""), [:], nil, "durability must be full"),
            (nil, ["ARCUS_DURABILITY": "extra"], nil, "durability must be full"),
            (try write("durability = true"), [:], nil, "durability should be a string"),
        ]
        for bad in refusals {
            do {
                _ = try durability(file: bad.file, environment: bad.environment, option: bad.option)
                Issue.record("accepted: \(bad)")
            } catch {
                #expect(error.message.contains(bad.says), "\(error.message)")
                if bad.says.contains("must be") {
                    #expect(error.message.contains("full (") && error.message.contains("or normal ("), "\(error.message)")
                }
                #expect(error.exitStatus == 2)
            }
        }
    }

    @Test("bad files and variables are refused with where and what")
    func refusals() throws {
        let cases: [(file: String?, environment: [String: String], says: String)] = [
            (try write("name = \"a\"\nnmae = \"b\""), [:], "unknown keys [\"nmae\"]"),
            (try write("name = \"a\"\ntransports = [\"lan\""), [:], "not valid TOML: line 2"),
            (try write("ble_links = \"four\""), [:], "ble_links should be a whole number"),
            (try write("ble_adapter = \"bluetooth0\""), [:], "--ble-adapter takes a controller as hciN or AA:BB:CC:DD:EE:FF"),
            (try write("{\"name\": 3}", named: "agent.json"), [:], "name should be a string"),
            (try write("[1, 2]", named: "agent.json"), [:], "not a JSON object"),
            (nil, ["ARCUS_BLE_LINKS": "many"], "ARCUS_BLE_LINKS must be a whole number"),
            (nil, ["ARCUS_CLOUD_STORE_AND_FORWARD": "maybe"], "ARCUS_CLOUD_STORE_AND_FORWARD must be true or false"),
            ("/nonexistent/arcus.toml", [:], "cannot read the configuration file"),
        ]
        for bad in cases {
            do {
                _ = try resolve(bad.file, environment: bad.environment)
                Issue.record("accepted: \(bad)")
            } catch {
                #expect(error.message.contains(bad.says), "\(error.message)")
                #expect(error.exitStatus == 2)
            }
        }
    }
}

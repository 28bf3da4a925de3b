import ArcusAgent
import ArcusBluetooth
import ArcusLoopback
import ArcusMesh
import ArcusTestSupport
import Foundation
import Logging
import Prometheus
import ServiceLifecycle
import Testing

/// Agents over the emulated Bluetooth radio (AF_UNIX SOCK_SEQPACKET in a shared directory, the
/// same channel code as L2CAP): multi-hop across a chain where only neighbours hear each other,
/// and a peer walking out of Bluetooth range onto the LAN and back.
@Suite("Agent: the emulated Bluetooth radio", .serialized)
struct AgentBluetoothTests {
    /// A short scratch directory: socket paths must fit sun_path.
    static func radioDirectory() throws -> String {
        let path = "/tmp/arcus-ble-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    struct Member {
        let agent: Agent
        let identity: PeerIdentity
        let directory: URL

        init(_ name: String, in scratch: URL, secret: String, transports: (PeerIdentity) -> [any Transport]) throws {
            directory = scratch.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            identity = try PeerIdentity.load(orCreateAt: directory.appendingPathComponent("identity"))
            let configuration = AgentConfiguration(dataDirectory: directory.path, name: name, subscriptions: ["SELECT * FROM notes"], meshSecretFile: secret)
            agent = try Agent(
                configuration: configuration, metricsFactory: PrometheusMetricsFactory(registry: PrometheusCollectorRegistry()),
                logger: Logger(label: "test.\(name)") { _ in SwiftLogNoOpLogHandler() }, transports: transports(identity)
            )
        }

        func has(_ id: String) -> Bool {
            (try? agent.store.execute("SELECT * FROM notes WHERE _id = :id", arguments: ["id": .string(id)]).items.count) == 1
        }

        func write(_ id: String) throws {
            _ = try agent.store.execute("INSERT INTO notes DOCUMENTS (:doc)", arguments: ["doc": .object(["_id": .string(id)])])
        }

        /// The kind of the link this agent sends to `other` on now.
        func activeKind(to other: Member) async -> LinkKind? {
            await agent.multiplexer.session(with: other.identity.peerID).activeLink?.kind
        }
    }

    static func emulated(_ directory: String, _ identity: PeerIdentity) -> BluetoothTransport {
        BluetoothTransport(
            radio: .emulated(EmulatedRadioSettings(directory: directory, phy: nil, scanInterval: .milliseconds(100))),
            peer: identity.peerID
        )
    }

    @Test("a chain where only neighbours hear each other: a write at one end reaches the other through the middle")
    func chainMultiHop() async throws {
        let radio = try Self.radioDirectory()
        let scratch = URL(fileURLWithPath: radio).appendingPathComponent("agents")
        defer { try? FileManager.default.removeItem(atPath: radio) }
        let secret = scratch.appendingPathComponent("secret").path
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        #expect(try SecretFile.create(MeshSecret.random().bytes, at: secret))
        let members = try ["a", "b", "c"].map { name in try Member(name, in: scratch, secret: secret) { [Self.emulated(radio, $0)] } }
        let (a, b, c) = (members[0], members[1], members[2])
        let id = { (m: Member) in m.identity.peerID.description }
        try EmulatedTopology(hears: [id(a): [id(b)], id(b): [id(a), id(c)], id(c): [id(b)]]).write(to: radio + "/topology.json")

        try a.write("from-a")
        try c.write("from-c")
        let group = ServiceGroup(services: members.map(\.agent), logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            if !(await eventually { c.has("from-a") && a.has("from-c") && b.has("from-a") && b.has("from-c") }) {
                // Where each session of the chain stood: what waits, what each link carried.
                var sides: [String] = []
                for (from, to) in [(a, b), (b, a), (b, c), (c, b)] {
                    let session = await from.agent.multiplexer.session(with: to.identity.peerID)
                    sides.append("\(from.identity.peerID)→\(to.identity.peerID): \(await session.linkStatuses); \(await session.diagnosis)")
                }
                let held = "a has from-c \(a.has("from-c")), b has from-a \(b.has("from-a")), from-c \(b.has("from-c")), c has from-a \(c.has("from-a"))"
                Issue.record("the writes did not cross the chain; \(held)\n\(sides.joined(separator: "\n"))")
            }
            // The ends never linked: everything went through b.
            let direct = await a.agent.multiplexer.session(with: c.identity.peerID).linkStatuses
            #expect(direct.isEmpty, "a and c linked although they do not hear each other: \(direct)")
            await group.triggerGracefulShutdown()
        }
    }

    @Test("walking out of Bluetooth range fails over to the LAN, and back to Bluetooth when the LAN goes; every write arrives")
    func walksOutOfRange() async throws {
        let radio = try Self.radioDirectory()
        let scratch = URL(fileURLWithPath: radio).appendingPathComponent("agents")
        defer { try? FileManager.default.removeItem(atPath: radio) }
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        let secret = scratch.appendingPathComponent("secret").path
        #expect(try SecretFile.create(MeshSecret.random().bytes, at: secret))
        let lan = LoopbackNetwork(kind: .lan, conditions: .lan)
        let walker = try Member("walker", in: scratch, secret: secret) { [Self.emulated(radio, $0), LoopbackTransport(name: "walker", peer: $0.peerID, on: lan)] }
        let stayer = try Member("stayer", in: scratch, secret: secret) { [Self.emulated(radio, $0), LoopbackTransport(name: "stayer", peer: $0.peerID, on: lan)] }
        let topology = radio + "/topology.json"
        let (w, s) = (walker.identity.peerID.description, stayer.identity.peerID.description)
        // Out of LAN reach at first, so that the session starts on Bluetooth.
        lan.setInRange("walker", "stayer", false)

        let group = ServiceGroup(services: [walker.agent, stayer.agent], logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            try walker.write("on-ble")
            #expect(await eventually { stayer.has("on-ble") })
            #expect(await walker.activeKind(to: stayer) == .bluetooth)

            // Both on the LAN too; then the walker walks out of Bluetooth range.
            let session = await walker.agent.multiplexer.session(with: stayer.identity.peerID)
            let kinds = { await Set(session.linkStatuses.map(\.kind)) }
            lan.setInRange("walker", "stayer", true)
            #expect(await eventually { await kinds().contains(.lan) }, "the LAN link never came up")
            try EmulatedTopology(hears: [w: [], s: []]).write(to: topology)
            #expect(await eventually { await !kinds().contains(.bluetooth) }, "walking out of range did not cut the Bluetooth link")
            try walker.write("on-lan")
            #expect(await eventually { stayer.has("on-lan") }, "the write did not go over the LAN")
            #expect(await walker.activeKind(to: stayer) == .lan)

            // Back in Bluetooth range; then the LAN goes.
            try FileManager.default.removeItem(atPath: topology)
            #expect(await eventually { await kinds().contains(.bluetooth) }, "the Bluetooth link did not come back in range")
            lan.setInRange("walker", "stayer", false)
            #expect(await eventually { await !kinds().contains(.lan) }, "the LAN link did not go")
            try walker.write("back-on-ble")
            #expect(await eventually { stayer.has("back-on-ble") }, "the write did not fail back to Bluetooth")
            #expect(await walker.activeKind(to: stayer) == .bluetooth)
            #expect(["on-ble", "on-lan", "back-on-ble"].allSatisfy(stayer.has))
            await group.triggerGracefulShutdown()
        }
    }
}

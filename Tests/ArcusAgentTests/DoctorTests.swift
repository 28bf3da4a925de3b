import ArcusAgent
import ArcusLAN
import ArcusTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `arcus doctor`: what it finds for each part, and that a failure only counts for what the
/// configuration runs.
@Suite(.serialized)
struct DoctorTests {
    func configuration(_ scratch: MeshScratch, transports: [TransportChoice], secret: String?, listen: LANAddress? = nil, peers: [LANAddress] = []) -> AgentConfiguration {
        AgentConfiguration(dataDirectory: scratch.data("d"), transports: transports, peers: peers, meshSecretFile: secret).with(listen: listen)
    }

    func check(_ checks: [DoctorCheck], _ area: String, _ name: String) -> DoctorCheck? {
        checks.first { $0.area == area && $0.name == name }
    }

    @Test("a good secret passes; a secret others may read, or none, fails with the command that fixes it")
    func credential() throws {
        let scratch = try MeshScratch("doctor")
        defer { scratch.remove() }
        let secret = scratch.directory.appendingPathComponent("secret").path
        let good = Doctor(configuration: configuration(scratch, transports: [.loopback], secret: secret)).run()
        #expect(check(good, "mesh", "credential")?.status == .ok)

        chmod(secret, 0o644)
        let open = try #require(check(Doctor(configuration: configuration(scratch, transports: [.lan], secret: secret)).run(), "mesh", "credential"))
        #expect(open.status == .failure && open.fix?.contains("chmod 600") == true, "\(open)")

        let none = try #require(check(Doctor(configuration: configuration(scratch, transports: [.lan], secret: nil)).run(), "mesh", "credential"))
        #expect(none.status == .failure && none.fix?.contains("mesh_secret_file") == true, "\(none)")
    }

    @Test("a listen port another socket holds is a failure; a free one is not")
    func listenAddress() throws {
        let scratch = try MeshScratch("doctor")
        defer { scratch.remove() }
        let port = try freePort()
        let holder = try HeldPort(port)
        let secret = scratch.directory.appendingPathComponent("secret").path
        let taken = Doctor(configuration: configuration(scratch, transports: [.lan], secret: secret, listen: LANAddress(host: "127.0.0.1", port: port),
                                                        peers: [LANAddress(host: "127.0.0.1", port: 1)])).run()
        let listenCheck = try #require(check(taken, "lan", "listen address"))
        #expect(listenCheck.status == .failure && listenCheck.detail.contains("\(port)"), "\(listenCheck)")
        #expect(!Doctor.passes(taken))

        holder.release()
        let free = Doctor(configuration: configuration(scratch, transports: [.lan], secret: secret, listen: LANAddress(host: "127.0.0.1", port: port))).run()
        #expect(check(free, "lan", "listen address")?.status == .ok)
    }

    @Test("avahi-daemon: ok when it answers; when not, a failure only for a LAN agent with no --peer, a warning with peers, unused without LAN")
    func avahi() throws {
        let scratch = try MeshScratch("doctor")
        defer { scratch.remove() }
        let secret = scratch.directory.appendingPathComponent("secret").path
        let lan = try #require(check(Doctor(configuration: configuration(scratch, transports: [.lan], secret: secret)).run(), "lan", "avahi-daemon"))
        let withPeers = try #require(check(Doctor(configuration: configuration(scratch, transports: [.lan], secret: secret, peers: [LANAddress(host: "127.0.0.1", port: 9)])).run(), "lan", "avahi-daemon"))
        let noLAN = try #require(check(Doctor(configuration: configuration(scratch, transports: [.loopback], secret: secret)).run(), "lan", "avahi-daemon"))
        switch AvahiService.probeDaemon() {
        case .success:
            #expect(lan.status == .ok && withPeers.status == .ok && noLAN.status == .ok)
        case .failure:
            #expect(lan.status == .failure && lan.fix?.contains("avahi-daemon") == true, "\(lan)")
            #expect(withPeers.status == .warning, "\(withPeers)")
            #expect(noLAN.status == .unused, "\(noLAN)")
        }
    }

    @Test("the table puts each fix under its check and ends with the verdict; JSON says ok as the exit status would")
    func report() throws {
        let scratch = try MeshScratch("doctor")
        defer { scratch.remove() }
        let checks = Doctor(configuration: configuration(scratch, transports: [.lan], secret: nil)).run()
        let table = DoctorReport.table(checks)
        #expect(table.hasPrefix("AREA"))
        #expect(table.contains("fix: arcus mesh secret"))
        #expect(table.hasSuffix("in the way of what the configuration asks for; see the fixes above."), "\(table)")
        #expect(DoctorReport.json(checks).contains("\"ok\":false"))
    }
}

extension AgentConfiguration {
    func with(listen: LANAddress?) -> AgentConfiguration {
        var copy = self
        copy.listen = listen
        return copy
    }
}

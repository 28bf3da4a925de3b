import ArcusAgent
import ArcusLAN
import Testing

extension AgentAvahiTests {
    @Test("arcus doctor finds the running avahi-daemon and names its version")
    func doctorSeesDaemon() throws {
        try #require(AvahiDaemonState.runs, "avahi-daemon is not running: start it confined to loopback with `Tools/start-avahi.sh start`")
        let scratch = try MeshScratch("doctor-avahi")
        defer { scratch.remove() }
        let checks = Doctor(configuration: AgentConfiguration(dataDirectory: scratch.data("d"), transports: [.lan], meshSecretFile: nil)).run()
        let avahi = try #require(checks.first { $0.area == "lan" && $0.name == "avahi-daemon" })
        #expect(avahi.status == .ok && avahi.detail.contains("avahi"), "\(avahi)")
    }
}

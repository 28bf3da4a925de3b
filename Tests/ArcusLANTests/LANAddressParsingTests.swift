import ArcusLAN
import Testing

@Suite("LAN addresses and static peers")
struct LANAddressParsingTests {
    @Test("host:port is read into its host and port, and written back the same", arguments: [
        ("192.168.1.20:7400", "192.168.1.20", 7400),
        ("gate-7.local:1", "gate-7.local", 1),
        ("  127.0.0.1:65535\n", "127.0.0.1", 65535),
        ("[::1]:7400", "::1", 7400),
        ("[fe80::1%eth0]:80", "fe80::1%eth0", 80),
    ])
    func readsGoodAddresses(_ text: String, host: String, port: Int) throws {
        let address = try LANAddress(parsing: text)
        #expect(address.host == host)
        #expect(address.port == port)
        #expect(try LANAddress(parsing: address.description) == address)
    }

    @Test("a bad address is refused with what is wrong", arguments: [
        ("", LANAddressError.empty),
        ("   ", .empty),
        ("192.168.1.20", .missingPort("192.168.1.20")),
        ("192.168.1.20:", .missingPort("192.168.1.20:")),
        (":7400", .missingHost(":7400")),
        ("gate 7:7400", .spaceInHost("gate 7:7400")),
        ("host:0", .invalidPort("host:0", port: "0")),
        ("host:65536", .invalidPort("host:65536", port: "65536")),
        ("host:-1", .invalidPort("host:-1", port: "-1")),
        ("host:74a", .invalidPort("host:74a", port: "74a")),
        ("host:99999999999999999999", .invalidPort("host:99999999999999999999", port: "99999999999999999999")),
        ("fe80::1:7400", .bareIPv6("fe80::1:7400")),
        ("[::1", .unclosedBracket("[::1")),
        ("[::1]7400", .missingPort("[::1]7400")),
        ("[]:7400", .missingHost("[]:7400")),
    ])
    func refusesBadAddresses(_ text: String, error: LANAddressError) {
        #expect(throws: error) { try LANAddress(parsing: text) }
    }

    @Test("every refusal says what to write instead")
    func refusalsSayWhatToWrite() {
        let errors: [LANAddressError] = [
            .empty, .missingPort("a"), .missingHost(":1"), .spaceInHost("a b:1"), .invalidPort("a:x", port: "x"), .unclosedBracket("[::1"),
        ]
        for error in errors { #expect(error.description.contains("host:port"), "\(error)") }
        #expect(LANAddressError.bareIPv6("fe80::1:7400").description.contains("[fe80::1]:7400"))
    }

    @Test("static peers read every entry, and name the first bad one")
    func staticPeersFromText() throws {
        let peers = try StaticPeers(parsing: ["10.0.0.2:7400", "[::1]:7401"])
        #expect(peers.addresses == [LANAddress(host: "10.0.0.2", port: 7400), LANAddress(host: "::1", port: 7401)])
        #expect(throws: LANAddressError.missingPort("10.0.0.3")) { try StaticPeers(parsing: ["10.0.0.2:7400", "10.0.0.3"]) }
    }
}

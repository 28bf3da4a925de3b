@testable import ArcusAgent
import ArcusTestSupport
import Foundation
import Hummingbird
import Testing

/// The rules behind the HTTP API's access checks, one by one: which Host names it serves (with
/// and without --http-expose, which the process tests cannot bind beyond loopback), which media
/// types it reads as JSON, how a token is compared and kept out of logs, and how the CLI reads
/// the kernel's table of listening sockets.
@Suite("HTTP API access rules")
struct APIAccessRulesTests {
    @Test("only loopback names are served, unless the API was exposed: then also its own name, or any IP address for a wildcard")
    func servedHosts() {
        let loopback = ServedHosts(http: "127.0.0.1", exposed: false)
        for host in ["127.0.0.1:4747", "127.0.0.1", "localhost:4747", "LocalHost", "[::1]:4747", "[::1]", "127.255.0.9:1", "[::ffff:127.0.0.1]:80", "[0:0:0:0:0:0:0:1]:9"] {
            #expect(loopback.allows(authority: host), "\(host)")
        }
        for host in ["evil.example:4747", "localhost.evil.example", "127.0.0.1.nip.io:4747", "10.0.0.7:4747", "0.0.0.0:4747", "[::]:4747", "",
                     "localhost:", "localhost:abc", "localhost:4747:1", "[::1", "::1", "user@localhost", "localhost/x", "127.0.0.1 :4747",
                     "2130706433", "0x7f.1", "localhost.:4747", "[fe80::1]:4747"] {
            #expect(!loopback.allows(authority: host), "\(host)")
        }
        // Exposure on a loopback address adds nothing.
        #expect(ServedHosts(http: "localhost", exposed: true).exposure == .none)

        let named = ServedHosts(http: "Pi-A.local", exposed: true)
        #expect(named.exposure == .host("pi-a.local"))
        #expect(named.allows(authority: "pi-a.local:4747") && named.allows(authority: "localhost:4747"))
        #expect(!named.allows(authority: "evil.example:4747") && !named.allows(authority: "192.0.2.1:4747"))
        let address = ServedHosts(http: "192.0.2.10", exposed: true)
        #expect(address.allows(authority: "192.0.2.10:4747") && !address.allows(authority: "192.0.2.11:4747"))
        let wildcard = ServedHosts(http: "0.0.0.0", exposed: true)
        #expect(wildcard.exposure == .anyAddress)
        #expect(wildcard.allows(authority: "192.0.2.10:4747") && wildcard.allows(authority: "[2001:db8::1]:4747"))
        #expect(!wildcard.allows(authority: "evil.example:4747"), "a name can be re-pointed; an address cannot")
        #expect(ServedHosts(http: "::", exposed: true).exposure == .anyAddress)
        // Not exposed: the address given changes nothing.
        #expect(!ServedHosts(http: "0.0.0.0", exposed: false).allows(authority: "192.0.2.10:4747"))
    }

    @Test("a body is JSON only when its Content-Type says application/json (UTF-8); the CORS-safelisted types are what any page may send")
    func mediaTypes() {
        #expect(BodyMediaType("application/json")?.essence == "application/json")
        #expect(BodyMediaType("Application/JSON; charset=\"UTF-8\"") == BodyMediaType("application/json;charset=utf-8"))
        #expect(BodyMediaType("application/json; charset=utf-8")?.charset == "utf-8")
        #expect(BodyMediaType("text/plain;charset=UTF-8")?.essence == "text/plain")
        for bad in ["", "json", "application/", "/json", "application /json", "application/json /x"] {
            #expect(BodyMediaType(bad) == nil, "\(bad)")
        }
        #expect(BodyMediaType(nil) == nil)
        #expect(BodyMediaType.sendableByAnyPage == ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"])
    }

    @Test("a token is 32 random bytes in 64 hex digits, matched in any case, never shown by its description")
    func tokens() {
        let token = APIToken.random()
        #expect(token.hex.count == 64 && token.hex.allSatisfy { $0.isHexDigit && !$0.isUppercase })
        #expect(token != APIToken.random())
        #expect(token.matches(Substring(token.hex)) && token.matches(Substring(token.hex.uppercased())))
        var other = Array(token.hex)
        other[63] = other[63] == "0" ? "1" : "0"
        #expect(!token.matches(Substring(String(other))))
        #expect(!token.matches(Substring(token.hex.dropLast())) && !token.matches(Substring(token.hex + "00")) && !token.matches(""))
        #expect(APIToken(hex: token.hex + "\n") == token && APIToken(hex: "zz" + token.hex.dropFirst(2)) == nil)
        #expect("\(token)" == "APIToken(<redacted>)" && !String(reflecting: token).contains(token.hex))
        #expect(APIAccessMiddleware<BasicRequestContext>.bearer("Bearer  abc") == "abc")
        #expect(APIAccessMiddleware<BasicRequestContext>.bearer("bearer abc") == "abc")
        #expect(APIAccessMiddleware<BasicRequestContext>.bearer("Basic abc") == nil)
        #expect(APIAccessMiddleware<BasicRequestContext>.bearer("Bearer ") == nil)
    }

    @Test("the CLI reads which users listen on a port from /proc/net/tcp's table: LISTEN lines only")
    func listeningSocketOwners() throws {
        let table = """
              sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
               0: 0100007F:128B 00000000:0000 0A 00000000:00000000 00:00000000 00000000   998        0 11 1 0000 100 0 0 10 0
               1: 00000000:128B 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 12 1 0000 100 0 0 10 0
               2: 0100007F:128B 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 13 1 0000 100 0 0 10 0
               3: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     5        0 14 1 0000 100 0 0 10 0
            """
        #expect(ListeningSocketOwners.listeners(in: table, port: 4747) == [998, 1000])
        #expect(ListeningSocketOwners.listeners(in: table, port: 8080) == [5])
        #expect(ListeningSocketOwners.listeners(in: table, port: 9) == [])
        // This machine's own table: nothing listens on a port just freed.
        let owners = try #require(ListeningSocketOwners.of(port: try freePort()))
        #expect(owners.isEmpty)
    }

    @Test("the CLI names its per-user token files by address: every loopback and wildcard address of a port shares one")
    func tokenFileNames() {
        for host in ["127.0.0.1", "localhost", "::1", "0.0.0.0", "::", "127.0.0.2"] {
            #expect(UserTokenFiles.name(host: host, port: 4747) == "localhost:4747", "\(host)")
        }
        #expect(UserTokenFiles.name(host: "Pi-A.local", port: 4747) == "pi-a.local:4747")
        #expect(UserTokenFiles.name(host: "fe80::1", port: 80) == "[fe80::1]:80")
        #expect(UserTokenFiles.name(host: "../etc", port: 1) == nil && UserTokenFiles.name(host: ".hidden", port: 1) == nil)
        #expect(UserTokenFiles.name(host: "127.0.0.1", port: 0) == nil)
    }
}

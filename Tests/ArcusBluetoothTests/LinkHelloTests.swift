import ArcusMesh
import Testing
@testable import ArcusBluetooth

@Suite("The dialler's hello")
struct LinkHelloTests {
    typealias LinkHello = ArcusBluetooth.LinkHello

    static let peer = PeerID(bytes: (0..<16).map { UInt8($0 * 7) })!

    @Test("names the dialler, and on an L2CAP radio the PSM it listens on (little-endian); each reads back")
    func roundTrip() {
        let plain = LinkHello(peer: Self.peer).encoded
        #expect(plain == Array("ARCUS-BLE1".utf8) + Self.peer.bytes)
        #expect(LinkHello.decode(plain) == LinkHello(peer: Self.peer))
        let withPSM = LinkHello(peer: Self.peer, psm: 0x0181).encoded
        #expect(withPSM == plain + [0x81, 0x01])
        #expect(LinkHello.decode(withPSM) == LinkHello(peer: Self.peer, psm: 0x0181))
    }

    @Test("anything else is no hello: short, long, one byte over, another magic")
    func refusesOthers() {
        let plain = LinkHello(peer: Self.peer).encoded
        #expect(LinkHello.decode(plain.dropLast()) == nil)
        #expect(LinkHello.decode(plain + [1]) == nil)
        #expect(LinkHello.decode(plain + [1, 2, 3]) == nil)
        #expect(LinkHello.decode([0x42] + plain.dropFirst()) == nil)
        #expect(LinkHello.decode([]) == nil)
    }
}

import ArcusMesh
import Testing

@Suite("Which of two peers dials")
struct TransportEndpointTests {
    static let low = PeerID(bytes: [0x10, 0, 0, 1] + [UInt8](repeating: 0xAA, count: 12))!
    static let high = PeerID(bytes: [0x90, 0, 0, 1] + [UInt8](repeating: 0x00, count: 12))!

    @Test("the lower id dials the higher, from its full id or (BLE) its prefix; equal prefixes both dial; a static peer is always dialled")
    func lowerDials() {
        #expect(TransportEndpoint(kind: .lan, address: "h:1", peer: Self.high).isDialled(by: Self.low))
        #expect(!TransportEndpoint(kind: .lan, address: "h:1", peer: Self.low).isDialled(by: Self.high))
        #expect(!TransportEndpoint(kind: .lan, address: "h:1", peer: Self.low).isDialled(by: Self.low))
        #expect(TransportEndpoint(kind: .bluetooth, address: "b", peerPrefix: [0x90, 0, 0, 1]).isDialled(by: Self.low))
        #expect(!TransportEndpoint(kind: .bluetooth, address: "b", peerPrefix: [0x10, 0, 0, 1]).isDialled(by: Self.high))
        // The same prefix, another peer (or this one): both sides dial; the multiplexer keeps one session.
        #expect(TransportEndpoint(kind: .bluetooth, address: "b", peerPrefix: [0x10, 0, 0, 1]).isDialled(by: Self.low))
        #expect(TransportEndpoint(kind: .lan, address: "h:1").isDialled(by: Self.high))
    }

    @Test("a full id makes the prefix moot: it is not kept, and the endpoint equals one made without it")
    func fullIdWins() {
        let endpoint = TransportEndpoint(kind: .bluetooth, address: "b", peer: Self.high, peerPrefix: [0x10, 0, 0, 1])
        #expect(endpoint.peerPrefix == nil && endpoint == TransportEndpoint(kind: .bluetooth, address: "b", peer: Self.high))
        #expect("\(TransportEndpoint(kind: .bluetooth, address: "b", peerPrefix: [0x90, 0, 0, 1]))" == "bluetooth b (peer 90000001…)")
    }
}

import ArcusBluetooth
import ArcusMesh
import ArcusTransportConformance
import Testing

/// A send the kernel refuses: on a channel it means the peer is gone and ends the link; on the
/// management socket it is one command refused (some are while a controller is off), and the
/// socket must go on — once it closed, the agent never advertised or discovered again until it
/// restarted (found by powering a controller off under a running agent in the VM pass).
@Suite("Refused sends on SOCK_SEQPACKET links")
struct RefusedSendTests {
    /// A pair whose `a` end refuses sends over 2 KiB (EMSGSIZE: a SEQPACKET message must fit the
    /// send buffer), as the kernel refuses a command it will not take.
    func pair(refusedSendEndsLink: Bool) throws -> (SeqPacketLink, SeqPacketLink) {
        let (a, b) = try SeqPacketSocket.pair()
        try a.setSendBuffer(bytes: 2048)
        return (
            try SeqPacketLink(socket: a, mtu: 65_535, description: "refusing", refusedSendEndsLink: refusedSendEndsLink),
            try SeqPacketLink(socket: b, mtu: 65_535, description: "reader")
        )
    }

    @Test("on the management socket a refused send fails alone, and the next goes through")
    func managementGoesOn() async throws {
        let (a, b) = try pair(refusedSendEndsLink: false)
        defer { a.close(); b.close() }
        await #expect(throws: SocketError.self) { try await a.send([UInt8](repeating: 7, count: 60_000)) }
        #expect(!a.isClosed)
        try await a.send([1, 2, 3])
        #expect(try await b.incoming.next(1, within: .seconds(10)) == [[1, 2, 3]])
    }

    @Test("on a channel a refused send ends the link")
    func channelEnds() async throws {
        let (a, b) = try pair(refusedSendEndsLink: true)
        defer { a.close(); b.close() }
        await #expect(throws: (any Error).self) { try await a.send([UInt8](repeating: 7, count: 60_000)) }
        #expect(a.isClosed)
    }
}

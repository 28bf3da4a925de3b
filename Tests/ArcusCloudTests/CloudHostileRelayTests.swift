@testable import ArcusCloud
import ArcusMesh
import ArcusTestSupport
import ArcusTransportConformance
import Testing

/// Whatever anyone publishes on a mesh's subjects, a transport's links carry on or close cleanly;
/// nothing crashes and no other link is harmed.
@Suite("Cloud transport against a hostile relay", .timeLimit(.minutes(2)))
struct CloudHostileRelayTests {
    @Test("garbage on a peer's link and presence subjects is dropped and counted; its link carries on")
    func garbageIsDropped() async throws {
        let (dialler, acceptor, link, accepted) = try await connectedPair()
        defer { Task { await dialler.stop(); await acceptor.stop() } }
        let intruder = try NATSConnection(NATSOptions(urls: [try SharedRelay.url()]))
        defer { intruder.close() }
        let subjects = acceptor.subjects
        let target = subjects.link(to: acceptor.peer, from: dialler.peer)
        var junk: [[UInt8]] = [[], [1], [1, 3, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0], [9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9]]
        junk.append(CloudFrame(.data, fromDialler: true, link: 1, body: [UInt8](repeating: 0, count: 64 << 10)).encoded)
        for bytes in junk {
            try intruder.publish(target, bytes)
            try intruder.publish(subjects.presence, bytes)
        }
        try intruder.flush(within: .seconds(5))
        try await link.send([1, 2, 3])
        #expect(try await accepted.incoming.next(1, within: .seconds(30)) == [[1, 2, 3]])
        #expect(acceptor.frameErrors >= 4)
        #expect(await acceptor.reachablePeers.map(\.peer) == [dialler.peer])
    }

    @Test("a forged data frame out of sequence closes only the link it names")
    func forgedFrameClosesItsLink() async throws {
        let (dialler, acceptor, link, accepted) = try await connectedPair()
        defer { Task { await dialler.stop(); await acceptor.stop() } }
        let second = try await dialler.open(to: acceptor.localEndpoint) as! CloudLink
        let intruder = try NATSConnection(NATSOptions(urls: [try SharedRelay.url()]))
        defer { intruder.close() }
        let forged = CloudFrame(.data, fromDialler: true, link: link.key.id, value: 77, body: [6, 6, 6])
        try intruder.publish(acceptor.subjects.link(to: acceptor.peer, from: dialler.peer), forged.encoded)
        try intruder.flush(within: .seconds(5))
        #expect(try await accepted.incoming.remaining(within: .seconds(30)).isEmpty)
        #expect(accepted.failure?.contains("lost frames") == true, "\(accepted.failure ?? "no failure")")
        await #expect(throws: LinkError.self) {
            for _ in 0..<100 {
                try await link.send([1])
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        try await second.send([4, 5])
        #expect(second.isClosed == false)
    }

    private func connectedPair() async throws -> (CloudTransport, CloudTransport, CloudLink, CloudLink) {
        let url = try SharedRelay.url()
        let mesh = SharedRelay.freshMesh()
        let dialler = CloudTransport(settings: .testing(url, mesh: mesh), peer: .random())
        let acceptor = CloudTransport(settings: .testing(url, mesh: mesh), peer: .random())
        let accepted = AcceptedLinks(acceptor.events)
        try await acceptor.start()
        try await dialler.start()
        let link = try await dialler.open(to: acceptor.localEndpoint) as! CloudLink
        return (dialler, acceptor, link, try await accepted.link(id: link.key.id))
    }
}

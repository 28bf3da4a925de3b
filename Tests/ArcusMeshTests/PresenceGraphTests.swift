import ArcusMesh
import Testing

@Suite("Presence graph")
struct PresenceGraphTests {
    typealias F = PresenceFixtures

    @Test("links are undirected and keyed by their ends and kind")
    func undirected() {
        var graph = PresenceGraph()
        graph.connect(F.peer(2), F.peer(1), kind: .lan, quality: LinkQuality(rttMilliseconds: 4))
        graph.connect(F.peer(1), F.peer(2), kind: .bluetooth)
        graph.connect(F.peer(1), F.peer(2), kind: .lan, quality: LinkQuality(rttMilliseconds: 5))
        #expect(graph.links.count == 2)
        #expect(graph.links(between: F.peer(2), F.peer(1)) == [.lan: LinkQuality(rttMilliseconds: 5), .bluetooth: LinkQuality()])
        #expect(graph.neighbours(of: F.peer(1)) == [F.peer(2)] && graph.neighbours(of: F.peer(2)) == [F.peer(1)])
        #expect(graph.peers[F.peer(1)]?.name == nil)
        graph.disconnect(F.peer(2), F.peer(1), kind: .lan)
        #expect(graph.links(between: F.peer(1), F.peer(2)) == [.bluetooth: LinkQuality()])
    }

    @Test("the version grows with every change and only then")
    func version() {
        var graph = PresenceGraph()
        graph.upsert(.init(id: F.peer(1), name: "a"))
        let afterPeer = graph.version
        graph.upsert(.init(id: F.peer(1), name: "a"))
        graph.disconnect(F.peer(1), F.peer(2), kind: .lan)
        #expect(graph.version == afterPeer)
        graph.connect(F.peer(1), F.peer(2), kind: .lan)
        #expect(graph.version > afterPeer)
        let afterLink = graph.version
        graph.remove(peer: F.peer(2))
        #expect(graph.version > afterLink && graph.links.isEmpty && graph.peers.keys.sorted() == [F.peer(1)])
    }

    @Test("routes: fewest hops, and the smaller next hop on a tie")
    func routes() {
        // 1 - 2 - 4 - 5 and 1 - 3 - 4: two shortest paths to 4 and 5, through 2 and through 3.
        var graph = PresenceGraph()
        graph.connect(F.peer(1), F.peer(3), kind: .lan)
        graph.connect(F.peer(3), F.peer(4), kind: .bluetooth)
        graph.connect(F.peer(1), F.peer(2), kind: .cloud)
        graph.connect(F.peer(2), F.peer(4), kind: .lan)
        graph.connect(F.peer(4), F.peer(5), kind: .lan)
        graph.upsert(.init(id: F.peer(6), name: "alone"))
        let routes = graph.routes(from: F.peer(1))
        #expect(routes[F.peer(2)]?.hops == 1 && routes[F.peer(2)]?.nextHop == F.peer(2))
        #expect(routes[F.peer(4)]?.hops == 2 && routes[F.peer(4)]?.nextHop == F.peer(2))
        #expect(routes[F.peer(5)]?.hops == 3 && routes[F.peer(5)]?.nextHop == F.peer(2))
        #expect(routes[F.peer(6)] == nil && routes[F.peer(1)] == nil)
        #expect(graph.reachableThroughOthers(from: F.peer(1)).map(\.destination) == [F.peer(4), F.peer(5)])
        #expect(graph.route(from: F.peer(5), to: F.peer(1))?.hops == 3)
        #expect(graph.route(from: F.peer(5), to: F.peer(1))?.nextHop == F.peer(4))
    }
}

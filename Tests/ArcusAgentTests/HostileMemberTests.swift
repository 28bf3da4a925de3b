import ArcusCodec
import ArcusCRDT
import ArcusMesh
import ArcusStore
import ArcusSync
import ArcusTestSupport
import Foundation
import Testing
@testable import ArcusAgent

/// A member of a certificate mesh that lies, through the real handshake, sealed links and sync
/// sessions (issue 17, findings 1–3): it gets exactly what its certificate grants.
@Suite("Hostile members", .serialized)
struct HostileMemberTests {
    @Test("finding 1: a member allowed to write only orders cannot switch the check off with a peer id that is not its site")
    func peerIDThatIsNotASite() async throws {
        let mesh = CertifiedNodes()
        let victim = try mesh.node("victim")
        defer { victim.engine.stop() }
        for forged in [Array(repeating: UInt8(9), count: 9), HandwrittenPeer.peerID(SiteID(0x0bad_0bad_0bad_0bad))] {
            let identity = PeerIdentity()
            let certificate = try mesh.certificate("mallory", for: identity, write: ["orders"])
            let (mallory, atVictim) = try await mesh.handwritten(certificate, identity: identity, to: victim)
            try await mallory.send(HandwrittenPeer.hello(forged))
            // Answers the victim's subscription as if it had been let in: a price it may not write.
            let prices = try HandwrittenPeer.documents(by: SiteID(peer: identity.peerID), [("prices", "p1", ["price": 1])])
            // (The victim may have closed the link already: then this send fails, as it should.)
            try? await mallory.send(.deltaBatch(DeltaBatch(documents: prices, subscriptionID: 1, answers: 1)))
            await atVictim.session.waitUntilEnded()
            #expect(atVictim.channel.refusalReason?.contains("names site") == true, "\(forged.count)-byte id: \(atVictim.channel.refusalReason ?? "not refused")")
            #expect(try victim.ids("prices").isEmpty, "a \(forged.count)-byte peer id let mallory write prices")
        }
    }

    @Test("finding 1: with its own site, a member's writes outside its certificate are refused, the rest merge")
    func writesOutsideTheCertificate() async throws {
        let mesh = CertifiedNodes()
        let victim = try mesh.node("victim")
        defer { victim.engine.stop() }
        let identity = PeerIdentity()
        let certificate = try mesh.certificate("mallory", for: identity, write: ["orders"])
        let (mallory, atVictim) = try await mesh.handwritten(certificate, identity: identity, to: victim)
        let site = SiteID(peer: identity.peerID)
        try await mallory.send(HandwrittenPeer.hello(HandwrittenPeer.peerID(site)))
        let summary = try #require(try await mallory.victimSummary())
        let writes = try HandwrittenPeer.documents(by: site, [("orders", "o1", ["qty": 2]), ("prices", "p1", ["price": 1])])
        try await mallory.send(.deltaBatch(DeltaBatch(documents: writes, subscriptionID: summary.subscriptionID, answers: 1)))
        let ended = await atVictim.session.endReason
        #expect(try await eventually { try victim.ids("orders") == ["o1"] }, "\(victim.log.all) \(mallory.received) \(ended ?? "")")
        #expect(try victim.ids("prices").isEmpty)
        #expect(victim.log.contains(.warning, "may not write prices"), "\(victim.log.all)")
        #expect(await atVictim.session.endReason == nil, "a refused write is not the end of the session")
        mallory.close()
    }

    @Test("finding 2: a member that may not relay cannot write in another member's name, whatever it may write itself")
    func writesInAnotherMembersName() async throws {
        let mesh = CertifiedNodes()
        let victim = try mesh.node("victim")
        let xavier = try mesh.node("xavier", write: ["prices"])
        defer { victim.engine.stop(); xavier.engine.stop() }
        let identity = PeerIdentity()
        let certificate = try mesh.certificate("mallory", for: identity, write: ["*"])
        let (mallory, _) = try await mesh.handwritten(certificate, identity: identity, to: victim)
        try await mallory.send(HandwrittenPeer.hello(HandwrittenPeer.peerID(SiteID(peer: identity.peerID))))
        let summary = try #require(try await mallory.victimSummary())
        // Stamped with xavier's site, in a collection xavier may write, with xavier's certificate
        // passed along as a relay would: still refused, mallory is no relay.
        try await mallory.send(.credentials(Credentials(items: [Credentials.Item(.certificate, bytes: xavier.certificate.encoded)])))
        let forged = try HandwrittenPeer.documents(by: xavier.site, [("prices", "p1", ["price": 0])])
        let own = try HandwrittenPeer.documents(by: SiteID(peer: identity.peerID), [("prices", "p2", ["price": 5])])
        try await mallory.send(.deltaBatch(DeltaBatch(documents: forged + own, subscriptionID: summary.subscriptionID, answers: 1)))
        #expect(try await eventually { try victim.ids("prices") == ["p2"] }, "mallory's own write merges")
        try await Task.sleep(for: .milliseconds(100))
        #expect(try victim.ids("prices") == ["p2"], "a write in xavier's name came from mallory")
        #expect(victim.log.contains(.warning, "may not relay"))
        mallory.close()
    }

    @Test("finding 2: a relay passes on a writer's events only where the writer's own certificate lets it write, and only with it")
    func relayHeldToTheWritersCertificate() async throws {
        let mesh = CertifiedNodes()
        let victim = try mesh.node("victim")
        let xavier = try mesh.node("xavier", write: ["prices"])
        defer { victim.engine.stop(); xavier.engine.stop() }
        let identity = PeerIdentity()
        let certificate = try mesh.certificate("rita", for: identity, write: ["*"], relay: true)
        let (rita, _) = try await mesh.handwritten(certificate, identity: identity, to: victim)
        try await rita.send(HandwrittenPeer.hello(HandwrittenPeer.peerID(SiteID(peer: identity.peerID))))
        let summary = try #require(try await rita.victimSummary())
        let stranger = SiteID(0x5757_5757_5757_5757)
        let before = try HandwrittenPeer.documents(by: xavier.site, [("prices", "p0", ["price": 1])])
        // Without xavier's certificate the victim cannot tell what xavier may write: refused.
        try await rita.send(.deltaBatch(DeltaBatch(documents: before, subscriptionID: summary.subscriptionID)))
        try await rita.send(.credentials(Credentials(items: [Credentials.Item(.certificate, bytes: xavier.certificate.encoded)])))
        let relayed = try HandwrittenPeer.documents(by: xavier.site, [("prices", "p1", ["price": 1]), ("secrets", "s1", ["code": 7])])
        let nobody = try HandwrittenPeer.documents(by: stranger, [("prices", "p2", ["price": 2])])
        try await rita.send(.deltaBatch(DeltaBatch(documents: relayed + nobody, subscriptionID: summary.subscriptionID, answers: 1)))
        #expect(try await eventually { try victim.ids("prices") == ["p1"] }, "xavier's price, passed on with his certificate, merges")
        try await Task.sleep(for: .milliseconds(100))
        #expect(try victim.ids("prices") == ["p1"])
        #expect(try victim.ids("secrets").isEmpty, "xavier may not write secrets, whoever relays it")
        #expect(victim.log.contains(.warning, stranger.description), "the writer no certificate names is reported")
        rita.close()
    }

    @Test("finding 3: a member's claim to have seen everything of another writer hides none of that writer's writes")
    func coversCannotCensor() async throws {
        let mesh = CertifiedNodes()
        let victim = try mesh.node("victim")
        let xavier = try mesh.node("xavier", write: ["prices"])
        let hub = try mesh.node("hub", relay: true)
        defer { [victim, xavier, hub].forEach { $0.engine.stop() } }
        // The hub holds xavier's write.
        try xavier.write("p1", into: "prices", ["price": 3])
        let (toHub, _) = try await CertifiedNodes.link(xavier, hub)
        #expect(try await eventually { try hub.ids("prices") == ["p1"] })
        toHub.channel.close()

        // Mallory answers the victim: "you now have everything xavier ever wrote".
        let identity = PeerIdentity()
        let (mallory, atVictim) = try await mesh.handwritten(try mesh.certificate("mallory", for: identity, write: ["orders"]), identity: identity, to: victim)
        try await mallory.send(HandwrittenPeer.hello(HandwrittenPeer.peerID(SiteID(peer: identity.peerID))))
        let summary = try #require(try await mallory.victimSummary())
        let claim = VersionVector([xavier.site: Timestamp(rawValue: .max)])
        try await mallory.send(.deltaBatch(DeltaBatch(documents: [], covers: claim, position: 1, subscriptionID: summary.subscriptionID, answers: 1)))
        #expect(await atVictim.session.waitUntilCaughtUp())
        mallory.close()
        await atVictim.session.waitUntilEnded()

        // Then the victim meets the hub, which has xavier's write: it comes.
        _ = try await CertifiedNodes.link(victim, hub)
        #expect(try await eventually { try victim.ids("prices") == ["p1"] }, "mallory's claim hid xavier's write")
    }

    @Test("multi-hop with certificates: a relay passes a writer's events on with its certificate to a peer that never met it; a member without the relay role passes on only its own")
    func multiHopThroughRelaysOnly() async throws {
        let mesh = CertifiedNodes()
        let writer = try mesh.node("writer", write: ["prices"])
        let relay = try mesh.node("relay", relay: true)
        let plain = try mesh.node("plain")
        let far = try mesh.node("far")
        defer { [writer, relay, plain, far].forEach { $0.engine.stop() } }
        _ = try await CertifiedNodes.link(writer, relay)
        _ = try await CertifiedNodes.link(relay, far)
        try writer.write("p1", into: "prices", ["price": 1])
        #expect(try await eventually { try far.ids("prices") == ["p1"] }, "through the relay")
        try writer.write("p1", into: "prices", ["price": 2])
        #expect(try await eventually { try far.value("p1", in: "prices", "price") == 2 }, "and later changes too")

        let other = try mesh.node("other")
        defer { other.engine.stop() }
        _ = try await CertifiedNodes.link(writer, plain)
        _ = try await CertifiedNodes.link(plain, other)
        #expect(try await eventually { try plain.ids("prices") == ["p1"] })
        try plain.write("x1", into: "notes")
        #expect(try await eventually { try other.ids("notes") == ["x1"] }, "plain's own writes pass")
        try await Task.sleep(for: .milliseconds(200))
        #expect(try other.ids("prices").isEmpty, "plain may not relay the writer's prices")
    }
}

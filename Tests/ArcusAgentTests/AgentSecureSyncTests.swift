import ArcusCodec
import ArcusCRDT
import ArcusLoopback
import ArcusMesh
import ArcusStore
import ArcusTestSupport
import ArcusSync
import Foundation
import Testing
@testable import ArcusAgent
@testable import ArcusDemo

/// Sync over authenticated, encrypted links: `SecureConnector` runs the mesh handshake on each
/// link, then a sync session with the peer's permissions, held to the site id bound to it.
@Suite("Secure sync", .serialized)
struct AgentSecureSyncTests {
    /// A store, its engine (subscribed to everything) and how it takes part in handshakes.
    final class Node: Sendable {
        let store: Store
        let engine: SyncEngine
        let identity: PeerIdentity
        let connector: SecureConnector

        /// `site`: the store's site, by default the one `identity` names (as every agent's store has).
        init(_ name: String, identity: PeerIdentity = PeerIdentity(), site: SiteID? = nil, credential: (PeerIdentity) throws -> MeshCredential) throws {
            var storeOptions = Store.Options()
            storeOptions.site = site ?? SiteID(peer: identity.peerID)
            store = try Store(inMemory: storeOptions)
            var options = SyncEngine.Options()
            options.name = name
            engine = try SyncEngine(store: store, options: options)
            _ = try engine.registerSubscription("")
            self.identity = identity
            connector = SecureConnector(identity: identity, credential: try credential(identity))
        }

        func insert(_ id: String, into collection: String) throws {
            try store.write { tx in _ = try tx.upsert(["_id": .string(id), "v": .int(1)], into: collection) }
        }

        func ids(_ collection: String) throws -> [String] {
            try store.execute("SELECT * FROM \(collection) ORDER BY _id").items.compactMap { $0[path: ["_id"]]?.stringValue }
        }
    }

    /// Links `dialer` and `acceptor` by a fresh loopback pair, secured, with a sync session at each end.
    static func link(_ dialer: Node, _ acceptor: Node) async throws -> (SecureConnector.Connection, SecureConnector.Connection) {
        let (a, b) = Loopback.pair(.instant, name: "secure-test")
        async let accepted = acceptor.connector.connect(b, as: .responder, to: acceptor.engine)
        let dialled = try await dialer.connector.connect(a, as: .initiator, to: dialer.engine)
        return (dialled, try await accepted)
    }

    static let secret = MeshSecret.random().secret

    /// Links them again, the dialer naming the acceptor so that the link resumes when it can;
    /// `dialerConnector` stands in for the dialer's own (same identity) when given.
    static func relink(
        _ dialer: Node, _ acceptor: Node, dialerConnector: SecureConnector? = nil
    ) async throws -> (SecureConnector.Connection, SecureConnector.Connection) {
        let (a, b) = Loopback.pair(.instant, name: "secure-test")
        async let accepted = acceptor.connector.connect(b, as: .responder, to: acceptor.engine)
        let dialled = try await (dialerConnector ?? dialer.connector).connect(a, as: .initiator, peer: acceptor.identity.peerID, to: dialer.engine)
        return (dialled, try await accepted)
    }

    /// Frames each side's engine sent and frames that went on the link.
    static func framesSent(_ connection: SecureConnector.Connection) -> (engine: Int, link: Int) {
        (connection.channel.framesSent.frames, connection.frames.framesSent.frames)
    }

    @Test("a later session resumes: the hellos both sides hold stay off the wire, and the stores still converge")
    func resumedSessionsLeaveHellosOut() async throws {
        let a = try Node("a", credential: { _ in .sharedSecret(Self.secret) })
        let b = try Node("b", credential: { _ in .sharedSecret(Self.secret) })
        defer { a.engine.stop(); b.engine.stop() }
        var expected: [String] = []
        for round in 0..<3 {
            try a.insert("a-\(round)", into: "cars")
            try b.insert("b-\(round)", into: "cars")
            expected += ["a-\(round)", "b-\(round)"]
            let (atA, atB) = try await Self.relink(a, b)
            let converged = try await eventually { try [a, b].allSatisfy { try $0.ids("cars") == expected.sorted() } }
            #expect(converged, "round \(round)")
            #expect((atA.link.resumption != nil) == (round > 0), "round \(round)")
            let sentA = Self.framesSent(atA), sentB = Self.framesSent(atB)
            // Every frame but the hello is on the wire once the link resumed.
            let left = round > 0 ? 1 : 0
            #expect(sentA.link == sentA.engine - left && sentB.link == sentB.engine - left, "round \(round): \(sentA) \(sentB)")
            atA.channel.close()
            await atA.session.waitUntilEnded()
            await atB.session.waitUntilEnded()
        }

        // A restarted dialer keeps its tickets but no longer holds b's hello: b sends it, a does not.
        let restarted = SecureConnector(handshake: a.connector.handshake)
        try a.insert("a-last", into: "cars")
        let (atA, atB) = try await Self.relink(a, b, dialerConnector: restarted)
        let converged = try await eventually { try b.ids("cars").contains("a-last") }
        #expect(converged && atA.link.resumption != nil)
        let sentA = Self.framesSent(atA), sentB = Self.framesSent(atB)
        #expect(sentA.link == sentA.engine - 1 && sentB.link == sentB.engine, "\(sentA) \(sentB)")
        #expect(restarted.hellos.hello(of: b.identity.peerID) != nil)
        atA.channel.close()
    }

    @Test("a chain of three over secure links converges, both ways across the middle peer")
    func chain() async throws {
        let nodes = try (0..<3).map { i in try Node("peer-\(i)", credential: { _ in .sharedSecret(Self.secret) }) }
        defer { nodes.forEach { $0.engine.stop() } }
        let (left, _) = try await Self.link(nodes[0], nodes[1])
        _ = try await Self.link(nodes[1], nodes[2])
        #expect(left.peer.peerID == nodes[1].identity.peerID)
        #expect(left.session.permissions == .all)
        try nodes[0].insert("from-0", into: "cars")
        try nodes[2].insert("from-2", into: "cars")
        let converged = try await eventually { try nodes.allSatisfy { try $0.ids("cars") == ["from-0", "from-2"] } }
        let seen = try nodes.map { try $0.ids("cars") }
        #expect(converged, "\(seen)")
    }

    @Test("a peer with the wrong secret is refused by the handshake and receives nothing")
    func wrongSecret() async throws {
        let member = try Node("member", credential: { _ in .sharedSecret(Self.secret) })
        let outsider = try Node("outsider", credential: { _ in .sharedSecret(MeshSecret.random().secret) })
        defer { member.engine.stop(); outsider.engine.stop() }
        try member.insert("secret-car", into: "cars")
        let (a, b) = Loopback.pair(.instant, name: "secure-test")
        async let accepted: Result<SecureConnector.Connection, any Error> = {
            do { return .success(try await member.connector.connect(b, as: .responder, to: member.engine)) } catch { return .failure(error) }
        }()
        await #expect(throws: (any Error).self) { try await outsider.connector.connect(a, as: .initiator, to: outsider.engine) }
        if case .success = await accepted { Issue.record("the member let the outsider in") }
        #expect(member.engine.sessions.isEmpty && outsider.engine.sessions.isEmpty)
        // What the member put on the link is its refusal to talk: no sync frame went out.
        try await Task.sleep(for: .milliseconds(50))
        #expect(try outsider.ids("cars").isEmpty)
        #expect(b.statistics.bytesSent == 0, "the responder answers nothing to a first message it cannot open")
    }

    @Test("a peer whose certificate lets it read only orders receives nothing of another collection, and its writes elsewhere are refused")
    func certificatePermissions() async throws {
        let authority = MeshAuthority()
        func certified(_ name: String, read: [String], write: [String]) throws -> Node {
            try Node(name, credential: { identity in
                let certificate = try authority.issue(
                    to: identity.publicKey, name: name,
                    permissions: CollectionPermissions(read: CollectionSet(read), write: CollectionSet(write))
                )
                return .certificate(certificate, authority: authority.publicKey)
            })
        }
        let hub = try certified("hub", read: ["*"], write: ["*"])
        let reader = try certified("orders-reader", read: ["orders"], write: ["orders"])
        defer { hub.engine.stop(); reader.engine.stop() }
        try hub.insert("o1", into: "orders")
        try hub.insert("c1", into: "cars")
        try reader.insert("r-car", into: "cars")
        try reader.insert("r-order", into: "orders")

        let (fromReader, atHub) = try await Self.link(reader, hub)
        #expect(atHub.session.permissions == SyncPermissions(read: .named(["orders"]), write: .named(["orders"]), relay: false))
        #expect(fromReader.session.permissions == SyncPermissions(read: .all, write: .all, relay: false), "the hub's certificate does not make it a relay")
        #expect(await eventually { (try? reader.ids("orders")) == ["o1", "r-order"] && (try? hub.ids("orders")) == ["o1", "r-order"] })
        _ = await atHub.session.waitUntilCaughtUp()
        try await Task.sleep(for: .milliseconds(100))
        #expect(try reader.ids("cars") == ["r-car"], "the hub sent a car to a peer that may read only orders")
        #expect(try hub.ids("cars") == ["c1"], "the hub merged a car from a peer that may write only orders")
    }

    @Test("a mesh peer whose sync hello names another site than its key names is refused and receives nothing")
    func siteBinding() async throws {
        let identity = PeerIdentity()
        let hub = try Node("hub", credential: { _ in .sharedSecret(Self.secret) })
        let honest = try Node("honest", identity: identity, credential: { _ in .sharedSecret(Self.secret) })
        let impostor = try Node("impostor", identity: identity, site: SiteID(0x6666_6666_6666_6666), credential: { _ in .sharedSecret(Self.secret) })
        defer { [hub, honest, impostor].forEach { $0.engine.stop() } }
        try hub.insert("c1", into: "cars")

        let (_, atHub) = try await Self.link(honest, hub)
        #expect(await eventually { (try? honest.ids("cars")) == ["c1"] })
        #expect(await atHub.session.peerID == Array(withUnsafeBytes(of: SiteID(peer: identity.peerID).rawValue.bigEndian) { $0 }))
        atHub.channel.close()

        let (_, again) = try await Self.link(impostor, hub)
        await again.session.waitUntilEnded()
        #expect(again.channel.refusalReason?.contains("names site") == true)
        #expect(try impostor.ids("cars").isEmpty)
    }

    @Test("sessions on resumed links go on with the codec contexts both sides hold; cuts and lost memory start afresh; every round converges",
          arguments: SeededRandom.seeds(count: 3, test: "codec-continuation"))
    func codecContinuation(seed: UInt64) async throws {
        print("codec-continuation seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var random = SeededRandom(seed: seed)
        let a = try Node("a", credential: { _ in .sharedSecret(Self.secret) })
        let b = try Node("b", credential: { _ in .sharedSecret(Self.secret) })
        defer { a.engine.stop(); b.engine.stop() }
        var dialer = a.connector
        var continued = 0, fresh = 0, written = 0
        for round in 0..<12 {
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                let node = Bool.random(using: &random) ? a : b
                written += 1
                try node.store.write { tx in
                    _ = try tx.upsert(
                        ["_id": .string("d\(written % 7)"), "status": .string(["open", "closed", "held"].randomElement(using: &random)!),
                         "zone\(written % 3)": .int(Int64(written))], into: ["orders", "sensors"].randomElement(using: &random)!
                    )
                }
            }
            switch Int.random(in: 0..<6, using: &random) {
            case 0:
                // The dialer restarts: same identity and tickets, no memory of hellos or contexts.
                dialer = SecureConnector(handshake: a.connector.handshake)
            case 1:
                // A session cut before it could finish: whatever the two ends kept, the next goes on safely.
                let (atA, atB) = try await Self.relink(a, b, dialerConnector: dialer)
                atA.link.close()
                await atA.waitUntilEnded()
                await atB.waitUntilEnded()
            default: break
            }
            let (atA, atB) = try await Self.relink(a, b, dialerConnector: dialer)
            func state(_ node: Node) throws -> [[Value]] {
                try ["orders", "sensors"].map { try node.store.execute("SELECT * FROM \($0) ORDER BY _id").items }
            }
            let converged = try await eventually { try state(a) == state(b) }
            #expect(converged, "seed \(seed), round \(round)")
            #expect(atA.continuedCodec.sending == atB.continuedCodec.receiving && atA.continuedCodec.receiving == atB.continuedCodec.sending)
            if atA.continuedCodec.sending || atA.continuedCodec.receiving { continued += 1 } else { fresh += 1 }
            atA.channel.close()
            await atA.waitUntilEnded()
            await atB.waitUntilEnded()
            for end in [atA, atB] {
                let reason = await end.session.endReason ?? ""
                #expect(!reason.contains("breaks the protocol"), "seed \(seed), round \(round): \(reason)")
            }
        }
        #expect(continued > 0 && fresh > 0, "seed \(seed): continued \(continued), fresh \(fresh)")
    }

    @Test("sync over the multiplexer's session per peer, on secure links, converges")
    func overPeerSession() async throws {
        let a = try Node("a", credential: { _ in .sharedSecret(Self.secret) })
        let b = try Node("b", credential: { _ in .sharedSecret(Self.secret) })
        defer { a.engine.stop(); b.engine.stop() }
        let muxA = Multiplexer(localPeer: a.identity.peerID), muxB = Multiplexer(localPeer: b.identity.peerID)
        let (linkA, linkB) = Loopback.pair(.instant, name: "secure-mux")
        async let securedB = b.connector.handshake.secure(linkB, as: .responder)
        let securedA = try await a.connector.handshake.secure(linkA, as: .initiator)
        let secureB = try await securedB
        async let sessionB = muxB.add(secureB, as: .acceptor)
        let sessionA = try await muxA.add(securedA, as: .dialer)
        let conversationB = try #require(await sessionB.conversation(after: nil))
        let conversationA = try #require(await sessionA.conversation(after: nil))
        let atB = b.connector.connect(conversationB, authenticatedAs: secureB.peer, to: b.engine)
        let atA = a.connector.connect(conversationA, authenticatedAs: securedA.peer, to: a.engine)
        try a.insert("from-a", into: "cars")
        try b.insert("from-b", into: "cars")
        let converged = try await eventually { try [a, b].allSatisfy { try $0.ids("cars") == ["from-a", "from-b"] } }
        #expect(converged)
        let heardB = await atA.peerID, heardA = await atB.peerID
        #expect(heardB == b.engine.peerID && heardA == a.engine.peerID)
        await muxA.close()
        await muxB.close()
    }

    @Test("certificate permissions map to sync permissions, \"*\" to every collection, and relay only where the certificate grants it")
    func permissionMapping() {
        #expect(SyncPermissions(.full) == .all)
        let mapped = SyncPermissions(CollectionPermissions(read: CollectionSet(["orders", "cars"]), write: .none))
        #expect(mapped == SyncPermissions(read: .named(["orders", "cars"]), write: .none, relay: false))
        #expect(SyncPermissions(CollectionPermissions(read: CollectionSet(["*", "x"]), write: .all, relay: true)) == .all)
    }
}

/// `arcus demo --secure`: the loopback mesh with every link handshaken and sealed.
@Suite("Secure loopback mesh", .serialized)
struct MeshDemoSecureSyncTests {
    @Test("a secured chain of three peers writing for a second converges, nothing lost, and says it ran secured")
    func securedChain() async throws {
        var options = MeshDemo.Options()
        options.shape = .chain
        options.peers = 3
        options.seconds = 1
        options.secure = true
        options.settleLimit = 60
        let figures = try await MeshDemo(options: options).run()
        #expect(figures.converged, "\(figures.jsonLine)")
        #expect(figures.verification.lost == 0)
        #expect(figures.writes > 0)
        #expect(figures.jsonLine.contains("\"secure\": true"))
        #expect(figures.handshakesFailed == 0)
    }
}

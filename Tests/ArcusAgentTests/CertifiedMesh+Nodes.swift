import ArcusCodec
import ArcusCRDT
import ArcusLoopback
import ArcusMesh
import ArcusStore
import ArcusSync
import Foundation
import Testing
@testable import ArcusAgent

/// Peers of one certificate mesh, in one process, linked by secured loopback links: the real
/// handshake, sealed frames and sync sessions, as agents run them — for tests that play a
/// hostile member against honest ones.
final class CertifiedNodes: Sendable {
    let authority = MeshAuthority()

    /// An honest member: a store under the site its key names, an engine that checks every
    /// writer against the certificates it holds (`MeshOrigins`), subscribed to everything.
    final class Node: Sendable {
        let name: String
        let identity: PeerIdentity
        let certificate: PeerCertificate
        let store: Store
        let engine: SyncEngine
        let origins: MeshOrigins
        let connector: SecureConnector
        let log = LogLines()

        init(_ name: String, certificate: PeerCertificate, identity: PeerIdentity, authority: AuthorityPublicKey) throws {
            self.name = name
            self.identity = identity
            self.certificate = certificate
            var storeOptions = Store.Options()
            storeOptions.site = SiteID(peer: identity.peerID)
            store = try Store(inMemory: storeOptions)
            let log = self.log
            origins = MeshOrigins(own: certificate, revocations: MeshRevocations(authority: authority), store: store, log: { log.add(.warning, $0) })
            var options = SyncEngine.Options()
            options.name = name
            options.origins = origins
            options.relays = certificate.permissions.relay
            options.log = { level, message in log.add(level, message) }
            engine = try SyncEngine(store: store, options: options)
            _ = try engine.registerSubscription("")
            var handshake = MeshHandshake(identity: identity, credential: .certificate(certificate, authority: authority))
            handshake.revocations = origins.revocations
            connector = SecureConnector(handshake: handshake, origins: origins)
        }

        var site: SiteID { store.site }

        func write(_ id: String, into collection: String, _ fields: [String: Value] = ["v": 1]) throws {
            var document = fields
            document["_id"] = .string(id)
            try store.write { tx in _ = try tx.upsert(document, into: collection) }
        }

        func ids(_ collection: String) throws -> [String] {
            try store.execute("SELECT * FROM \(collection) ORDER BY _id").items.compactMap { $0[path: ["_id"]]?.stringValue }
        }

        func value(_ id: String, in collection: String, _ field: String) throws -> Value? {
            try store.collection(collection).findByID(.string(id)).exec()?[path: [field]]
        }
    }

    func certificate(_ name: String, for identity: PeerIdentity, read: [String] = ["*"], write: [String], relay: Bool = false,
                     expiresAt: Date? = nil) throws -> PeerCertificate {
        try authority.issue(
            to: identity.publicKey, name: name,
            permissions: CollectionPermissions(read: CollectionSet(read), write: CollectionSet(write), relay: relay), expiresAt: expiresAt
        )
    }

    func node(_ name: String, write: [String] = ["*"], relay: Bool = false) throws -> Node {
        let identity = PeerIdentity()
        return try Node(name, certificate: try certificate(name, for: identity, write: write, relay: relay), identity: identity, authority: authority.publicKey)
    }

    /// Links two honest nodes: `dialer` dials, each runs a sync session on its end.
    static func link(_ dialer: Node, _ acceptor: Node) async throws -> (SecureConnector.Connection, SecureConnector.Connection) {
        let (a, b) = Loopback.pair(.instant, name: "certified")
        async let accepted = acceptor.connector.connect(b, as: .responder, to: acceptor.engine)
        let dialled = try await dialer.connector.connect(a, as: .initiator, to: dialer.engine)
        return (dialled, try await accepted)
    }

    /// A member that speaks the sync protocol by hand over a real secured link to `victim`: it
    /// makes the handshake with its own certificate (`identity`), then sends whatever frames the
    /// test writes, sealed as an agent would seal them.
    func handwritten(_ certificate: PeerCertificate, identity: PeerIdentity, to victim: Node) async throws
        -> (peer: HandwrittenPeer, atVictim: SecureConnector.Connection)
    {
        let (a, b) = Loopback.pair(.instant, name: "hostile")
        async let accepted = victim.connector.connect(b, as: .responder, to: victim.engine)
        let handshake = MeshHandshake(identity: identity, credential: .certificate(certificate, authority: authority.publicKey))
        let secure = try await handshake.secure(a, as: .initiator)
        let channel = AuthenticatedSyncChannel(LinkSyncChannel(secure), peer: secure.peer)
        return (HandwrittenPeer(channel), try await accepted)
    }
}

/// The hostile side of a sync session, written by hand: frames made with the real codec.
final class HandwrittenPeer: @unchecked Sendable {
    // Used from one test task at a time.
    private let channel: AuthenticatedSyncChannel
    private var encoder = FrameEncoder()
    private var decoder = FrameDecoder()
    private var frames: AsyncStream<[UInt8]>.Iterator
    private(set) var received: [SyncMessage] = []

    init(_ channel: AuthenticatedSyncChannel) {
        self.channel = channel
        frames = channel.incoming.makeAsyncIterator()
    }

    /// The site this side's hello named, if it named one.
    private var ownSite: SiteID?

    func send(_ message: SyncMessage) async throws {
        if case .hello(let hello) = message { ownSite = SiteID(peerID: hello.peerID) }
        try await channel.send(encoder.encode(message))
    }

    /// Reads the victim's messages until one `matches` (or the session ends: nil).
    func next(where matches: (SyncMessage) -> Bool) async throws -> SyncMessage? {
        while let frame = await frames.next() {
            guard let message = try decoder.decode(frame) else { continue }
            if case .hello(let hello) = message, let site = SiteID(peerID: hello.peerID) {
                // As the codec's sessions do once both hellos are out: each direction names both sites in a byte.
                encoder.context.intern(site)
                if let ownSite { decoder.context.intern(ownSite) }
            }
            received.append(message)
            if matches(message) { return message }
        }
        return nil
    }

    /// The victim's summary of the subscription it announced (after its hello and subscribe).
    func victimSummary() async throws -> Summary? {
        if case .summary(let summary)? = try await next(where: { if case .summary = $0 { true } else { false } }) { return summary }
        return nil
    }

    func close() { channel.close() }

    /// `site`'s 8 bytes, as a sync hello names a peer.
    static func peerID(_ site: SiteID) -> [UInt8] { withUnsafeBytes(of: site.rawValue.bigEndian) { Array($0) } }

    /// The hello of a peer named `peerID`.
    static func hello(_ peerID: [UInt8], name: String = "mallory") -> SyncMessage {
        .hello(Hello(peerID: peerID, protocolVersion: SyncSession.protocolVersion, capabilities: [Credentials.capability], name: name))
    }

    /// Documents as the writer `site` would have made them (stamped by its clock).
    static func documents(by site: SiteID, _ writes: [(collection: String, id: String, fields: [String: Value])]) throws -> [DocumentDelta] {
        var options = Store.Options()
        options.site = site
        let forger = try Store(inMemory: options)
        for write in writes {
            var document = write.fields
            document["_id"] = .string(write.id)
            try forger.write { tx in _ = try tx.upsert(document, into: write.collection) }
        }
        return try forger.changes(after: 0, since: .empty).batch.documents
    }
}

/// A node's log, for asserting what it said.
final class LogLines: Sendable {
    private let lines = Mutex<[(SyncLogLevel, String)]>([])
    func add(_ level: SyncLogLevel, _ message: String) { lines.withLock { $0.append((level, message)) } }
    var all: [(SyncLogLevel, String)] { lines.withLock { $0 } }
    func contains(_ level: SyncLogLevel, _ text: String) -> Bool { all.contains { $0.0 == level && $0.1.contains(text) } }
}

import Synchronization

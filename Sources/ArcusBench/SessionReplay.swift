import ArcusAgent
import ArcusCRDT
import ArcusCodec
import ArcusLoopback
import ArcusMesh
import ArcusStore
import ArcusSync
import Foundation

/// `TraceBench` with `exchange: .protocol`: each replica is a `Store` (in memory, or durable in
/// its own data directory) with a `SyncEngine` subscribed to everything, and every
/// `sync from→to` is one sync session over a fresh loopback link: `to` pulls, `from` only
/// serves, and the link closes once `to` has everything `from` had and `from` has its ack.
/// The acknowledged positions persist in the stores, so the next sync between the same two
/// resumes where this one ended, as it would between two devices.
extension TraceBench {
    /// One replica: a store and the engine that syncs it.
    final class SessionReplica {
        let store: Store
        let engine: SyncEngine
        /// With `secure`: how this replica takes part in every handshake (its own identity,
        /// made once, and the run's shared secret).
        let connector: SecureConnector?

        init(store: Store, connector: SecureConnector? = nil) throws {
            self.store = store
            self.connector = connector
            var options = SyncEngine.Options()
            // With certificates, what the engine checks writers against.
            options.origins = connector?.origins
            engine = try SyncEngine(store: store, options: options)
            _ = try engine.registerSubscription("")
        }

        /// Every document's whole state, for comparing replicas.
        func snapshot() throws -> DeltaBatch { try store.changes(after: 0, since: .empty, limit: .max).batch }
    }

    func runSessions(progress: ((Double) -> Void)?) async throws -> Figures {
        var figures = Figures(trace: trace.header.name, store: storage.rawValue)
        figures.exchange = Exchange.protocol.rawValue
        let root = scratch.appendingPathComponent("arcus-trace-\(UUID().uuidString)")
        let clock = ReplayClock()
        var options = Store.Options()
        options.physicalClock = clock.physical
        options.conflictsPerField = conflictsPerField
        if secure { (figures.handshakeBytes, figures.syncFrameBytes, figures.credential) = (0, 0, credential.rawValue) }
        let secret = MeshSecret.random().secret
        let authority = MeshAuthority()
        var made = 0
        func makeReplica() throws -> SessionReplica {
            made += 1
            let identity = PeerIdentity()
            var options = options
            // A secure replica's store writes under the site its key names, as an agent's does.
            if secure { options.site = SiteID(peer: identity.peerID) }
            let store: Store
            switch storage {
            case .memory: store = try Store(inMemory: options)
            case .sqlite: store = try Store(directory: root.appendingPathComponent("replica-\(made)"), options: options)
            }
            guard secure else { return try SessionReplica(store: store) }
            switch credential {
            case .secret:
                return try SessionReplica(store: store, connector: SecureConnector(identity: identity, credential: .sharedSecret(secret)))
            case .certificates:
                // Every replica passes on what it received: each is a relay.
                let certificate = try authority.issue(
                    to: identity.publicKey, name: "replica-\(made)", permissions: CollectionPermissions(read: .all, write: .all, relay: true),
                    expiresAt: Date().addingTimeInterval(86_400)
                )
                let revocations = MeshRevocations(authority: authority.publicKey)
                let origins = MeshOrigins(own: certificate, revocations: revocations, store: store)
                var handshake = MeshHandshake(identity: identity, credential: .certificate(certificate, authority: authority.publicKey))
                handshake.revocations = revocations
                return try SessionReplica(store: store, connector: SecureConnector(handshake: handshake, origins: origins))
            }
        }
        var replicas: [SessionReplica] = []
        defer {
            for replica in replicas { replica.engine.stop() }
            try? FileManager.default.removeItem(at: root)
        }
        for _ in 0..<trace.header.replicas { replicas.append(try makeReplica()) }
        var localChanges = 0, documentsMerged = 0
        try await replayOperations(clock: clock, into: &figures, progress: progress) { replica, key, mutation in
            localChanges += try replicas[replica].store.write { tx in _ = try tx.apply(key, mutation) }.count
        } sync: { from, to, figures in
            let moved = try await Self.session(from: replicas[from], to: replicas[to])
            figures.wireBytes += moved.bytes
            figures.frames += moved.frames
            documentsMerged += moved.documentsMerged
            if secure {
                figures.handshakeBytes? += moved.handshakeBytes
                figures.syncFrameBytes? += moved.syncFrameBytes
            }
        }

        (figures.localChanges, figures.documentsMerged) = (localChanges, documentsMerged)

        // A fresh peer catching up with replica 0 through the same protocol. Producing and
        // merging overlap in a session, so the whole exchange counts as encoding.
        let fresh = try makeReplica()
        replicas.append(fresh)
        let snapshotStart = monotonicSeconds()
        let snapshot = try await Self.session(from: replicas[0], to: fresh)
        figures.snapshotEncodeSeconds = monotonicSeconds() - snapshotStart
        figures.snapshotDecodeSeconds = nil
        figures.snapshotBytes = snapshot.bytes

        figures.idleExchange = try await Self.idleExchange(from: replicas[0], to: fresh)

        let snapshots = try replicas.map { try $0.snapshot() }
        (figures.converged, figures.stateJSONBytes) = Self.compare(snapshots, collections: trace.header.collections)
        return figures
    }

    /// What one sync moved. `bytes` is what `wire_bytes` counts: plain, the sync frames both
    /// sides sent (whole codec frames, before fragmentation); secure, every byte both sides put
    /// on the loopback link under the `SecureLink` — the handshake, and each sealed fragment
    /// (fragment header, sync frame bytes, 16-byte tag). `syncFrameBytes` is then the plain
    /// count of the same session, so the difference is what security costs.
    /// `documentsMerged`: the documents the pulling side merged that changed its store.
    struct Moved {
        var bytes = 0, frames = 0, handshakeBytes = 0, syncFrameBytes = 0, documentsMerged = 0
    }

    /// One one-way sync: a session over a fresh loopback link until `client` has everything
    /// `server` has and `server` has taken every frame `client` sent (its last ack). With
    /// connectors (`secure`), the link is first secured by the mesh handshake — the client
    /// dials — and the session runs over the `SecureLink`.
    static func session(from server: SessionReplica, to client: SessionReplica) async throws -> Moved {
        let (serverLink, clientLink) = Loopback.pair(.instant, name: "trace")
        if let serverConnector = server.connector, let clientConnector = client.connector {
            let serverEngine = server.engine
            async let accepted = serverConnector.secure(serverLink, as: .responder, for: serverEngine)
            let dialled = try await clientConnector.secure(
                clientLink, as: .initiator, peer: serverConnector.handshake.identity.peerID, for: client.engine
            )
            let secured = try await accepted
            let handshake = serverLink.statistics.bytesSent + clientLink.statistics.bytesSent
            let serving = serverConnector.connect(secured, to: server.engine, pulling: false)
            let pulling = clientConnector.connect(dialled, to: client.engine)
            let documentsMerged = try await run(serving: serving.session, pulling: pulling.session, close: pulling.channel)
            // What each side keeps for the next session with the other is in place before it starts.
            await serving.waitUntilEnded()
            await pulling.waitUntilEnded()
            let a = serving.channel.framesSent, b = pulling.channel.framesSent
            return Moved(
                bytes: serverLink.statistics.bytesSent + clientLink.statistics.bytesSent, frames: a.frames + b.frames,
                handshakeBytes: handshake, syncFrameBytes: a.bytes + b.bytes, documentsMerged: documentsMerged
            )
        }
        let serverChannel = LinkSyncChannel(serverLink), clientChannel = LinkSyncChannel(clientLink)
        let serving = server.engine.connect(serverChannel, pulling: false)
        let pulling = client.engine.connect(clientChannel)
        let documentsMerged = try await run(serving: serving, pulling: pulling, close: clientChannel)
        let a = serverChannel.framesSent, b = clientChannel.framesSent
        return Moved(bytes: a.bytes + b.bytes, frames: a.frames + b.frames, syncFrameBytes: a.bytes + b.bytes,
                     documentsMerged: documentsMerged)
    }

    /// The median cost of a sync between two replicas that already hold the same data.
    static func idleExchange(from server: SessionReplica, to client: SessionReplica) async throws -> IdleExchange {
        var samples: [IdleExchange] = []
        for _ in 0..<IdleExchange.rounds {
            let (start, cpu) = (monotonicSeconds(), processCPUSeconds())
            let moved = try await session(from: server, to: client)
            samples.append(IdleExchange(seconds: monotonicSeconds() - start, cpuSeconds: processCPUSeconds() - cpu,
                                        bytes: moved.bytes, frames: moved.frames))
        }
        func median<T: Comparable>(_ value: (IdleExchange) -> T) -> T { samples.map(value).sorted()[samples.count / 2] }
        return IdleExchange(seconds: median(\.seconds), cpuSeconds: median(\.cpuSeconds), bytes: median(\.bytes), frames: median(\.frames))
    }

    /// Waits until the pulling side is caught up and the serving side has its last ack, then
    /// closes the client's channel and waits for both sessions to end; returns the documents the
    /// pulling side merged. Runs on the pulling session's executor, so that waiting on it takes no
    /// thread hops: each hop of the bench's own task could wake a thread, which a sync between two
    /// devices does not pay (about 7% of an idle sync's context switches).
    private static func run(serving: SyncSession, pulling: isolated SyncSession, close clientChannel: any SyncChannel) async throws -> Int {
        guard await pulling.waitUntilCaughtUp() else {
            throw BenchError("a sync session ended before the subscriber caught up: \(pulling.endReason ?? "no reason given")")
        }
        await pulling.waitUntilIdle()
        await serving.waitUntilReceived(frames: pulling.statistics.framesSent)
        clientChannel.close()
        await serving.waitUntilEnded()
        await pulling.waitUntilEnded()
        return pulling.statistics.documentsReceived
    }
}

import ArcusBluetooth
import ArcusCRDT
import ArcusCloud
import ArcusLAN
import ArcusLoopback
import ArcusMesh
import ArcusStore
import ArcusSync
import Foundation
import Logging
import Metrics
import ServiceLifecycle
import Synchronization

/// One running agent: the store in its data directory, its peer identity, the sync engine, the
/// multiplexer with its presence tracker, and the transports whose links feed them. As a
/// `Service` it runs the transports until graceful shutdown, then stops every part in order.
/// The HTTP API (`AgentHTTPAPI`) is a second service over the same agent.
///
/// Opening fails with a `CommandError` that says what to do: another process holds the data
/// directory, the identity file is unreadable, a subscription does not parse.
public final class Agent: Service, Sendable {
    public let configuration: AgentConfiguration
    public let store: Store
    public let engine: SyncEngine
    public let identity: PeerIdentity
    public let multiplexer: Multiplexer
    public let presence: PresenceTracker
    /// What the HTTP API wants on every data route (`DIR/api-token`, made on the first start).
    public let apiToken: APIToken
    let metrics: AgentMetrics
    let observations = ObservationStreams()
    /// Attachment fetches the HTTP API started; cancelled when the agent stops.
    let attachmentDownloads = AttachmentDownloads()
    package let logger: Logger
    /// Every transport the agent runs (`ALTER SYSTEM SET transports` changes the list).
    package var transports: [any Transport] { liveTransports.withLock { $0 } }
    let liveTransports: Mutex<[any Transport]>
    /// False when the program gave the agent its transports: it cannot make others.
    let buildsTransports: Bool
    /// Where the LAN transport listened before `ALTER SYSTEM` stopped it, so that it listens
    /// there again when turned back on (its peers' `--peer` still names that port).
    let stoppedLANAddress = Mutex<LANAddress?>(nil)
    /// SHOW and ALTER SYSTEM's settings: the configuration's and the data directory's overrides.
    let settings: AgentSettings
    /// The level every copy of `logger` logs at (`log_level`).
    let logLevel: AdjustableLogLevel
    /// Held by each ALTER SYSTEM while it applies its change.
    let settingChanges = AsyncLock()
    /// Which transports started (see `startTransports`).
    let transportStarts: TransportStarts
    /// Secures links for sync; nil when no mesh credential is configured (links are refused).
    let connector: SecureConnector?
    /// Peers whose mesh session already carries a sync session.
    let syncedPeers = Mutex<Set<PeerID>>([])
    /// `tombstone_lifetime_s` as ALTER SYSTEM set it while running (nil: the configuration's).
    let tombstoneLifetime = Mutex<Int?>(nil)
    /// Whether the reaper should look for tombstones at once (`reapSoon()`).
    let reapRequested = Mutex(false)
    /// Admits links of scarce transports one at a time (see `admit`).
    let scarceAdmissions = AsyncLock()
    /// Peers with a scarce link between the room check and its binding, and how many such links.
    let scarceReservations = Mutex<[PeerID: Int]>([:])
    /// In a certificate mesh, the writers' certificates and the revocation list in force.
    public let origins: MeshOrigins?
    /// Revocation lists as they are adopted, with the peers each newly revokes.
    let adoptedRevocations: AsyncStream<(RevocationList, Set<PeerID>)>
    /// Peers whose certificate expiry is being watched (see `watchExpiry`).
    let expiryWatched = Mutex<Set<PeerID>>([])
    /// The slots every transport's accepted links wait for their hello and handshake in
    /// (`AgentConfiguration.pendingHandshakes`).
    let pendingHandshakes: PendingHandshakes
    /// Lines about links others open (failed handshakes, refusals), at a bounded rate.
    let strangerLog: RateLimitedLog
    /// The connection policy, asked before an authenticated peer's link joins a session.
    let admission: AdmissionPolicy
    /// When the agent was made (`system:system_info`'s uptime).
    package let startedAt = ContinuousClock.now

    /// - Parameter transports: transports to run instead of those `configuration` names, for a
    ///   program that embeds the agent or a test that links agents over one loopback network.
    ///   They must not have been started.
    ///
    /// `configuration` is the configuration file's and command line's; what `ALTER SYSTEM` saved
    /// in the data directory (`SettingsFile`) is laid over it, and `configuration` then holds the
    /// result. `logger`'s level is the configured `log_level`.
    public init(
        configuration configured: AgentConfiguration, metricsFactory: any MetricsFactory, logger given: Logger, transports: [any Transport]? = nil
    ) throws(CommandError) {
        try configured.checkHTTPExposure()
        var baseline = configured
        baseline.logLevel = given.logLevel
        let settingsFile = SettingsFile(dataDirectory: configured.dataDirectory)
        let overrides = try settingsFile.read()
        var configuration = baseline
        for (setting, value) in overrides {
            do throws(StoreError) { try setting.apply(value, to: &configuration) } catch { throw CommandError("\(settingsFile.path): \(error.description)") }
        }
        settings = AgentSettings(
            configured: Dictionary(uniqueKeysWithValues: RuntimeSetting.allCases.map { ($0, $0.configured(baseline)) }),
            overrides: overrides, file: settingsFile, running: true
        )
        let levels = AdjustableLogLevel(configuration.logLevel)
        logLevel = levels
        let logger = levels.adjusting(given)
        self.configuration = configuration
        self.logger = logger
        let directory = URL(fileURLWithPath: configuration.dataDirectory)
        var storeOptions = Store.Options()
        storeOptions.clockSkewAllowance = configuration.clockSkewAllowance
        storeOptions.synchronous = configuration.durability.synchronous
        storeOptions.conflictsPerField = configuration.conflictsPerField
        do {
            (store, identity) = try DataDirectoryStore.open(directory, options: storeOptions)
        } catch let error as IdentityError {
            throw CommandError("cannot use the identity in \(configuration.dataDirectory): \(error)")
        } catch {
            throw CommandError("cannot open the store in \(configuration.dataDirectory): \(error)")
        }
        if !store.accessChanges.isEmpty {
            // An earlier version (or a hand-made directory) left the data open to other users.
            logger.warning("made the data directory \(configuration.dataDirectory) private to its owner: \(store.accessChanges.joined(separator: ", "))")
        }
        if let recovery = store.recoveredFromClockPoisoning { logger.warning("\(recovery)") }
        // The store holds the directory's lock: no upload of this directory is under way.
        AgentHTTPAPI.removeLeftoverUploads(in: configuration.dataDirectory, logger: logger)
        apiToken = try APITokenFile.load(orCreateIn: configuration.dataDirectory)
        let metrics = AgentMetrics(factory: metricsFactory)
        self.metrics = metrics
        let strangerLog = RateLimitedLog(logger: logger, suppressed: { kind in metrics.logLinesLeftOut(kind).increment() })
        self.strangerLog = strangerLog
        let credential = try MeshCredentialFiles.load(configuration, for: identity)
        let (adopted, adoptedSink) = AsyncStream.makeStream(of: (RevocationList, Set<PeerID>).self)
        adoptedRevocations = adopted
        var options = SyncEngine.Options()
        options.name = configuration.name
        options.lazyPushHold = configuration.lazyPushHoldMilliseconds > 0 ? .milliseconds(configuration.lazyPushHoldMilliseconds) : nil
        options.log = { [logger] level, message in logger.log(level: Logger.Level(level), "\(message)") }
        switch credential {
        case .certificate(let certificate, let authority)?:
            origins = MeshOrigins(
                own: certificate, revocations: MeshRevocations(authority: authority), store: store,
                adopted: { list, revoked in adoptedSink.yield((list, revoked)) },
                // Peers can make it say things (a certificate that does not check): at a bounded rate.
                log: { message in strangerLog.log(.warning, "credentials", "\(message)", source: "a peer") }
            )
            options.origins = origins
            // Only a relay's peers take other writers' events from it.
            options.relays = certificate.permissions.relay
            if configuration.role == .hub && !certificate.permissions.relay {
                logger.warning("this hub's certificate does not make it a relay: its peers will take only its own writes from it; issue it with `arcus mesh issue --relay`")
            }
        default:
            if configuration.revocationFile != nil {
                throw CommandError("revocation_file is for a mesh of certificates (certificate_file and authority_file); a shared secret admits whoever holds it", exitStatus: 2)
            }
            origins = nil
        }
        if let path = configuration.revocationFile, let origins {
            try Self.adoptRevocations(at: path, into: origins)
        }
        do {
            engine = try SyncEngine(store: store, options: options)
            presence = try PresenceTracker(peer: identity.peerID, name: String(configuration.name.utf8.prefix(PresenceReport.Limits.nameBytes)) ?? "agent")
        } catch {
            throw CommandError("cannot start the sync engine: \(error)")
        }
        multiplexer = Multiplexer(localPeer: identity.peerID, presence: presence)
        admission = configuration.admission
        pendingHandshakes = PendingHandshakes(limits: configuration.pendingHandshakes, observe: { event in
            metrics.count(event)
            if case .refused(let kind, let source, let refusal) = event {
                strangerLog.log(
                    .warning, "refused a link: too many handshakes pending", "refused a \(kind.rawValue) link: too many handshakes pending", source: source,
                    metadata: ["source": "\(source)", "limit": "\(refusal == .full ? "all sources" : "per source")"]
                )
            }
        })
        let identity = self.identity
        let origins = self.origins
        connector = credential.map { credential in
            var handshake = MeshHandshake(identity: identity, credential: credential)
            handshake.revocations = origins?.revocations
            return SecureConnector(handshake: handshake, origins: origins)
        }
        buildsTransports = transports == nil
        let running: [any Transport]
        if let transports {
            running = transports
        } else {
            var made: [any Transport] = []
            let (credential, gate) = (connector?.handshake.credential, pendingHandshakes)
            for choice in configuration.transports {
                made.append(try Self.transport(choice, configuration, identity: identity, credential: credential, pendingHandshakes: gate, logger: logger))
            }
            running = made
        }
        liveTransports = Mutex(running)
        transportStarts = TransportStarts(
            names: transports == nil ? configuration.transports.map(\.rawValue) : running.map(\.kind.rawValue)
        )
        if !configuration.transports.contains(.cloud) && !configuration.cloud.urls.isEmpty {
            logger.warning("--cloud is for the cloud transport, which this agent does not run (add cloud to --transports)")
        }
        if !configuration.transports.contains(.lan) && (configuration.listen != nil || !configuration.peers.isEmpty) {
            logger.warning("--listen and --peer are for the LAN transport, which this agent does not run (add lan to --transports)")
        }
        // Every subscription is checked before any is written, so that a bad one leaves the
        // store as it was.
        var queries: [SubscriptionQuery] = []
        for text in configuration.subscriptions { queries.append(try Self.query(text, arguments: [:])) }
        // A hub keeps everything: one subscription to the whole store, which also serves every
        // peer's subscription from what it holds.
        if configuration.role == .hub { queries.append(.everything) }
        for query in queries { _ = try register(query) }
        SystemCollections.register(for: self)
        store.registerSettings(StoredSettingsStatements(settings: settings))
    }

    /// A new transport of `choice`, as `configuration` says.
    static func transport(
        _ choice: TransportChoice, _ configuration: AgentConfiguration, identity: PeerIdentity, credential: MeshCredential?,
        pendingHandshakes: PendingHandshakes, logger: Logger
    ) throws(CommandError) -> any Transport {
        switch choice {
        case .lan:
            return lanTransport(configuration, identity: identity, credential: credential, pendingHandshakes: pendingHandshakes, logger: logger)
        case .ble:
            return bluetoothTransport(configuration, identity: identity, credential: credential, pendingHandshakes: pendingHandshakes, logger: logger)
        case .cloud:
            return try cloudTransport(configuration, identity: identity, credential: credential, pendingHandshakes: pendingHandshakes, logger: logger)
        case .loopback:
            // An in-process network of its own: the seam every transport plugs into.
            return LoopbackTransport(name: configuration.name, peer: identity.peerID, on: LoopbackNetwork(kind: .loopback))
        }
    }

    /// TCP on `--listen` (default: every interface, a port the system picks), finding peers in
    /// `--peer` and, unless `--no-mdns`, through avahi-daemon (mDNS), advertising the mesh's hash
    /// so that only agents of the same mesh dial each other.
    private static func lanTransport(
        _ configuration: AgentConfiguration, identity: PeerIdentity, credential: MeshCredential?, pendingHandshakes: PendingHandshakes, logger: Logger
    ) -> LANTransport {
        let listen = configuration.listen ?? LANAddress(host: "0.0.0.0", port: 0)
        var discovery: [any LANDiscovery] = [StaticPeers(configuration.peers)]
        if configuration.mdns {
            discovery.append(AvahiDiscovery(
                name: configuration.name, meshHash: credential?.meshHash ?? String(repeating: "0", count: 16),
                warn: { [logger] warning in logger.warning("\(warning)") }
            ))
        }
        return LANTransport(listeningOn: listen, peer: identity.peerID, discovery: discovery, pendingHandshakes: pendingHandshakes)
    }

    /// Bluetooth LE: the emulated radio in `--ble-emulated DIR`, or the machine's adapter through
    /// BlueZ. Where the machine has no usable Bluetooth, starting it logs why and what to do, and
    /// the agent goes on with its other transports.
    private static func bluetoothTransport(
        _ configuration: AgentConfiguration, identity: PeerIdentity, credential: MeshCredential?, pendingHandshakes: PendingHandshakes,
        logger: Logger
    ) -> BluetoothTransport {
        let adapter = L2CAPRadioSettings(adapter: configuration.bleAdapter, psm: configuration.blePSM ?? 0)
        let radio: BluetoothRadio = configuration.bleEmulatedDirectory.map { .emulated(EmulatedRadioSettings(directory: $0)) } ?? .l2cap(adapter)
        return BluetoothTransport(
            radio: radio, peer: identity.peerID, meshHash: credential?.meshHash ?? "", pendingHandshakes: pendingHandshakes,
            report: { [logger] note in logger.notice("\(note)") }
        )
    }

    /// The NATS relay in `--cloud`, in this agent's mesh: peers of other meshes on the same relay
    /// never see each other.
    private static func cloudTransport(
        _ configuration: AgentConfiguration, identity: PeerIdentity, credential: MeshCredential?, pendingHandshakes: PendingHandshakes,
        logger: Logger
    ) throws(CommandError) -> CloudTransport {
        guard !configuration.cloud.urls.isEmpty else {
            throw CommandError("--transports cloud needs the relay: give --cloud nats://HOST:PORT (or \"cloud\" in --config)", exitStatus: 2)
        }
        let settings = configuration.cloud.settings(meshHash: credential?.meshHash ?? "", name: configuration.name)
        return CloudTransport(
            settings: settings, identity: identity, pendingHandshakes: pendingHandshakes,
            warn: { [logger] warning in logger.warning("\(warning)") }, note: { [logger] note in logger.info("\(note)") }
        )
    }


    /// Registers a sync subscription; the engine persists it, so it outlives the process.
    public func subscribe(_ text: String, arguments: [String: Value] = [:]) throws(CommandError) -> SyncEngine.SubscriptionEntry {
        try register(try Self.query(text, arguments: arguments))
    }

    private static func query(_ text: String, arguments: [String: Value]) throws(CommandError) -> SubscriptionQuery {
        do {
            return try SubscriptionQuery(text, arguments: arguments)
        } catch let error as DQLError {
            throw CommandError("the subscription is not a valid query: error at \(error.description)", exitStatus: 2)
        } catch {
            throw CommandError("the subscription was refused: \(error)", exitStatus: 2)
        }
    }

    private func register(_ query: SubscriptionQuery) throws(CommandError) -> SyncEngine.SubscriptionEntry {
        do {
            return try engine.registerSubscriptionEntry(query)
        } catch {
            throw CommandError("could not record the subscription \(query): \(error)")
        }
    }

    /// `{"agent": "ready", …}`: the line printed on standard output once the API listens. It
    /// names the file that holds the API's token, never the token; `lan` is where the LAN
    /// transport listens, its port bound (so that a script can give `--listen HOST:0` and then
    /// `--peer` it to another agent); `exposed_to` says who may reach an API exposed beyond this machine.
    public func readyLine(http url: String) -> String {
        var fields: [String: Value] = [
            "agent": "ready", "http": .string(url), "peer": .string(identity.peerID.description),
            "name": .string(configuration.name), "data": .string(configuration.dataDirectory),
            "transports": .array(transportStarts.running.map { .string($0) }),
            "token_file": .string(APITokenFile.path(in: configuration.dataDirectory)),
        ]
        let failed = transportStarts.failed
        if !failed.isEmpty { fields["transports_failed"] = .object(failed.mapValues { .string($0) }) }
        if transportStarts.running.contains(LinkKind.lan.rawValue), let lan = transports.first(where: { $0.kind == .lan }) {
            fields["lan"] = .string(lan.localEndpoint.address)
        }
        if let exposure = httpExposure(url: url) { fields["exposed_to"] = .string(exposure) }
        return Value.object(fields).jsonString
    }

    /// Who can use an API exposed beyond this machine (nil when it listens on loopback only).
    public func httpExposure(url: String) -> String? {
        guard !ServedHosts.isLoopback(configuration.http.host) else { return nil }
        return """
            anyone who can reach \(url) over the network and holds the token in \(APITokenFile.path(in: configuration.dataDirectory)); \
            plain HTTP: the token and the data cross the network readable
            """
    }

    /// Runs the transports until graceful shutdown (SIGTERM, SIGINT), then closes, in order:
    /// the observe streams (so that the HTTP server can drain), the transports, the sync
    /// sessions, the multiplexer.
    public func run() async throws {
        let started = await startTransports()
        await withDiscardingTaskGroup { group in
            for (transport, outcome) in zip(transports, started) where outcome.failure == nil {
                group.addTask { await self.runTransport(transport) }
            }
            group.addTask { await self.watchSessions() }
            group.addTask { await self.enforceRevocations() }
            group.addTask { await self.reapTombstones() }
            group.addTask {
                // Summaries of the log lines left out, once each window is over.
                while !Task.isCancelled {
                    try? await Task.sleep(for: self.strangerLog.limits.window)
                    self.strangerLog.flush()
                }
            }
            try? await gracefulShutdown()
            logger.info("stopping")
            // What the sessions already sent leaves before the links close; a peer that is not
            // reachable now gets it at the next meeting, from the store.
            let unsent = await engine.flush(within: .seconds(2))
            if unsent > 0 { logger.info("stopping with \(unsent) sync sessions' last frames not yet on a link (their peers get them at the next meeting)") }
            strangerLog.flush(all: true)
            observations.finishAll()
            attachmentDownloads.cancelAll()
            for transport in transports { await transport.stop() }
            engine.stop()
            await multiplexer.close()
            group.cancelAll()
        }
        logger.info("stopped")
    }
}

extension Logger.Level {
    init(_ level: SyncLogLevel) {
        switch level {
        case .info: self = .info
        case .warning: self = .warning
        case .error: self = .error
        }
    }
}

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
    let metrics: AgentMetrics
    let observations = ObservationStreams()
    /// Attachment fetches the HTTP API started; cancelled when the agent stops.
    let attachmentDownloads = AttachmentDownloads()
    let logger: Logger
    /// Every transport the agent runs; LAN, Bluetooth and cloud join this list as they are built.
    let transports: [any Transport]
    /// Secures links for sync; nil when no mesh credential is configured (links are refused).
    let connector: SecureConnector?
    /// Peers whose mesh session already carries a sync session.
    let syncedPeers = Mutex<Set<PeerID>>([])
    /// Admits links of scarce transports one at a time (see `admit`).
    let scarceAdmissions = AsyncLock()

    /// - Parameter transports: transports to run instead of those `configuration` names, for a
    ///   program that embeds the agent or a test that links agents over one loopback network.
    ///   They must not have been started.
    public init(
        configuration: AgentConfiguration, metricsFactory: any MetricsFactory, logger: Logger, transports: [any Transport]? = nil
    ) throws(CommandError) {
        self.configuration = configuration
        self.logger = logger
        let directory = URL(fileURLWithPath: configuration.dataDirectory)
        var storeOptions = Store.Options()
        storeOptions.clockSkewAllowance = configuration.clockSkewAllowance
        do {
            store = try Store(directory: directory, options: storeOptions)
        } catch {
            throw CommandError("cannot open the store in \(configuration.dataDirectory): \(error)")
        }
        if let recovery = store.recoveredFromClockPoisoning { logger.warning("\(recovery)") }
        // The store holds the directory's lock: no upload of this directory is under way.
        AgentHTTPAPI.removeLeftoverUploads(in: configuration.dataDirectory, logger: logger)
        do {
            identity = try PeerIdentity.load(orCreateAt: directory.appendingPathComponent("identity"))
        } catch {
            throw CommandError("cannot use the identity in \(configuration.dataDirectory): \(error)")
        }
        var options = SyncEngine.Options()
        options.name = configuration.name
        options.log = { [logger] level, message in logger.log(level: Logger.Level(level), "\(message)") }
        do {
            engine = try SyncEngine(store: store, options: options)
            presence = try PresenceTracker(peer: identity.peerID, name: String(configuration.name.utf8.prefix(PresenceReport.Limits.nameBytes)) ?? "agent")
        } catch {
            throw CommandError("cannot start the sync engine: \(error)")
        }
        multiplexer = Multiplexer(localPeer: identity.peerID, presence: presence)
        metrics = AgentMetrics(factory: metricsFactory)
        let identity = self.identity
        connector = try Self.connector(for: configuration, identity: identity)
        if let transports {
            self.transports = transports
        } else {
            var made: [any Transport] = []
            for choice in configuration.transports {
                switch choice {
                case .lan:
                    made.append(Self.lanTransport(configuration, identity: identity, credential: connector?.handshake.credential, logger: logger))
                case .ble:
                    made.append(Self.bluetoothTransport(configuration, identity: identity, credential: connector?.handshake.credential))
                case .cloud:
                    made.append(try Self.cloudTransport(configuration, identity: identity, credential: connector?.handshake.credential, logger: logger))
                default:
                    // An in-process network of its own: the seam every transport plugs into.
                    made.append(LoopbackTransport(name: configuration.name, peer: identity.peerID, on: LoopbackNetwork(kind: .loopback)))
                }
            }
            self.transports = made
        }
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
    }

    /// TCP on `--listen` (default: every interface, a port the system picks), finding peers in
    /// `--peer` and through avahi-daemon (mDNS), advertising the mesh's hash so that only agents of
    /// the same mesh dial each other.
    private static func lanTransport(
        _ configuration: AgentConfiguration, identity: PeerIdentity, credential: MeshCredential?, logger: Logger
    ) -> LANTransport {
        let listen = configuration.listen ?? LANAddress(host: "0.0.0.0", port: 0)
        let statics = StaticPeers(configuration.peers)
        let mdns = AvahiDiscovery(
            name: configuration.name, meshHash: credential?.meshHash ?? String(repeating: "0", count: 16),
            warn: { [logger] warning in logger.warning("\(warning)") }
        )
        return LANTransport(listeningOn: listen, peer: identity.peerID, discovery: [statics, mdns])
    }

    /// Bluetooth LE: the emulated radio in `--ble-emulated DIR`, or the machine's adapter through
    /// BlueZ. Where the machine has no usable Bluetooth, starting it logs why and what to do, and
    /// the agent goes on with its other transports.
    private static func bluetoothTransport(_ configuration: AgentConfiguration, identity: PeerIdentity, credential: MeshCredential?) -> BluetoothTransport {
        let adapter = L2CAPRadioSettings(adapter: .any(psm: configuration.blePSM ?? 0))
        let radio: BluetoothRadio = configuration.bleEmulatedDirectory.map { .emulated(EmulatedRadioSettings(directory: $0)) } ?? .l2cap(adapter)
        return BluetoothTransport(radio: radio, peer: identity.peerID, meshHash: credential?.meshHash ?? "")
    }

    /// The NATS relay in `--cloud`, in this agent's mesh: peers of other meshes on the same relay
    /// never see each other.
    private static func cloudTransport(
        _ configuration: AgentConfiguration, identity: PeerIdentity, credential: MeshCredential?, logger: Logger
    ) throws(CommandError) -> CloudTransport {
        guard !configuration.cloud.urls.isEmpty else {
            throw CommandError("--transports cloud needs the relay: give --cloud nats://HOST:PORT (or \"cloud\" in --config)", exitStatus: 2)
        }
        let settings = configuration.cloud.settings(meshHash: credential?.meshHash ?? "", name: configuration.name)
        return CloudTransport(
            settings: settings, peer: identity.peerID,
            warn: { [logger] warning in logger.warning("\(warning)") }, note: { [logger] note in logger.info("\(note)") }
        )
    }

    private static func connector(for configuration: AgentConfiguration, identity: PeerIdentity) throws(CommandError) -> SecureConnector? {
        try MeshCredentialFiles.load(configuration, for: identity).map { SecureConnector(identity: identity, credential: $0) }
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

    /// `{"agent": "ready", …}`: the line printed on standard output once the API listens.
    public func readyLine(http url: String) -> String {
        Value.object([
            "agent": "ready", "http": .string(url), "peer": .string(identity.peerID.description),
            "name": .string(configuration.name), "data": .string(configuration.dataDirectory),
            "transports": .array(configuration.transports.map { .string($0.rawValue) }),
        ]).jsonString
    }

    /// Runs the transports until graceful shutdown (SIGTERM, SIGINT), then closes, in order:
    /// the observe streams (so that the HTTP server can drain), the transports, the sync
    /// sessions, the multiplexer.
    public func run() async throws {
        await withDiscardingTaskGroup { group in
            for transport in transports {
                group.addTask { await self.runTransport(transport) }
            }
            group.addTask { await self.watchSessions() }
            try? await gracefulShutdown()
            logger.info("stopping")
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

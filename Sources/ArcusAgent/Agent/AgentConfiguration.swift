import ArcusBluetooth
import ArcusLAN
import ArcusMesh
import ArcusStore
import ArcusSync
import Foundation
import Logging

/// What `arcus agent` runs with: its options, from the command line over an optional JSON
/// configuration file (`--config`) whose keys are the options' names:
///
///     {"name": "pump-3", "http": "127.0.0.1:4747", "transports": ["loopback"],
///      "peers": ["10.0.0.7:4040"], "subscribe": ["SELECT * FROM readings"], "mesh_secret_file": "/etc/arcus/secret"}
///
/// A mesh is joined by a shared secret (`mesh_secret_file`) or by a certificate its authority
/// signed (`certificate_file`, with the authority's public key in `authority_file`), not both.
public struct AgentConfiguration: Sendable {
    public var dataDirectory: String
    public var name: String
    /// Where the HTTP API listens.
    public var http: LANAddress
    /// Whether `http` may be an address beyond this machine (`--http-expose`): the API then
    /// answers anyone who reaches it and holds the token, over plain HTTP.
    public var httpExposed = false
    /// Where the LAN transport will listen for peers (kept until that transport exists).
    public var listen: LANAddress?
    public var transports: [TransportChoice]
    /// Peers to dial directly, for the LAN transport.
    public var peers: [LANAddress]
    /// Whether the LAN transport finds peers, and is found, over mDNS (avahi-daemon) besides
    /// `peers`. Off (`--no-mdns`), it publishes nothing: a bench or a test on 127.0.0.1 then
    /// sends no packet beyond this machine.
    public var mdns = true
    /// Subscriptions registered (and so persisted) at start, besides those the store holds.
    public var subscriptions: [String]
    /// A file holding the mesh's shared secret; without one (or a certificate) links cannot be
    /// secured, so the agent accepts none.
    public var meshSecretFile: String?
    /// This agent's certificate (`arcus mesh issue --out`), and the authority's public key
    /// (`authority.pub`) that every peer's certificate must verify with.
    public var certificateFile: String?
    public var authorityFile: String?
    /// A revocation list from the authority (`arcus mesh revoke`), adopted at start if it is newer
    /// than the one the agent holds; peers pass it on to each other.
    public var revocationFile: String?
    /// How many Bluetooth links to hold at once, and how often to exchange one for a waiting peer.
    public var scarceLinks = ScarceLinkBudget()
    /// For `--transports ble`: the emulated radio's shared directory instead of the machine's adapter.
    public var bleEmulatedDirectory: String?
    /// The L2CAP PSM to listen on; nil for a dynamic one (0x80–0xFF), which adverts carry.
    public var blePSM: UInt16?
    /// The Bluetooth controller to use ("hci1" or its address); nil for the lowest-numbered.
    public var bleAdapter: BluetoothAdapter?
    /// For `--transports cloud`: the NATS relay.
    public var cloud = CloudConfiguration()
    public var role = AgentRole.peer
    /// Whether the agent hands the pages start-up touched back to the kernel once it has
    /// settled (`StartupMemory`).
    public var releaseStartupMemory = true
    /// How many accepted links may wait for their hello and handshake at once, in all and from
    /// one source, and for how long (`pending_handshakes`, `pending_handshakes_per_source`,
    /// `handshake_deadline_s`; the defaults are `PendingHandshakes.Limits`'s).
    public var pendingHandshakes = PendingHandshakes.Limits()
    /// How long a sync session holds live changes for a peer that asked for them lazily, in
    /// milliseconds; 0 turns lazy push off (`lazy_push_hold_ms`; `SyncEngine.Options.lazyPushHold`).
    public var lazyPushHoldMilliseconds = Int(SyncEngine.Options.lazyPushDefaultHold / .milliseconds(1))
    /// The most `lazy_push_hold_ms` takes: a longer hold only delays what a cut tree must graft.
    public static let lazyPushHoldLimit = 10_000
    /// How long a removed document's tombstone is kept before it is reaped, in seconds; 0 keeps
    /// tombstones for ever (`tombstone_lifetime_s`; Docs/Sync.md "Reaped tombstones"). A week,
    /// as Ditto keeps them on devices; a peer away longer is brought forward when it returns.
    public var tombstoneLifetimeSeconds = defaultTombstoneLifetimeSeconds
    public static let defaultTombstoneLifetimeSeconds = 7 * 86_400
    /// The longest `tombstone_lifetime_s`: ten years.
    public static let tombstoneLifetimeLimit = 3650 * 86_400
    /// How far ahead of this device's clock a peer's write may be stamped and still be merged
    /// (`Store.Options.clockSkewAllowance`; `clock_skew_allowance`, `--clock-skew-allowance`).
    public var clockSkewAllowance = Store.defaultClockSkewAllowance
    /// The most `--clock-skew-allowance` takes: past a year it no longer bounds anything a
    /// device could honestly be off by.
    public static let clockSkewAllowanceLimit: Duration = .seconds(366 * 86_400)
    /// How many concurrent values that lost a last-writer-wins merge the conflict view keeps per
    /// field (`Store.Options.conflictsPerField`; `conflicts_per_field`, 0 to 64, default 0: off).
    public var conflictsPerField = Store.defaultConflictsPerField
    /// What an acknowledged write survives (`durability`, `--durability`): by default `full`,
    /// a power cut too.
    public var durability = Durability.full
    /// The lowest level logged (`log_level`, `--log-level`); `ALTER SYSTEM SET log_level` changes it live.
    public var logLevel = Logger.Level.info
    /// The log files in `DATA/logs` where no journal keeps the log (`log_file_bytes`, `log_files`).
    public var logLimits = RotatingLogFile.Limits()
    /// The connection policy (`admission_allow`, `admission_deny`, `admission_callback`,
    /// `admission_callback_timeout_s`): who may open a session, beyond what the mesh credential admits.
    var admission = AdmissionPolicy()

    public static let defaultHTTP = LANAddress(host: "127.0.0.1", port: 4747)

    public init(
        dataDirectory: String, name: String? = nil, http: LANAddress = Self.defaultHTTP, listen: LANAddress? = nil,
        transports: [TransportChoice] = [.loopback], peers: [LANAddress] = [], subscriptions: [String] = [], meshSecretFile: String? = nil,
        certificateFile: String? = nil, authorityFile: String? = nil
    ) {
        self.dataDirectory = dataDirectory
        self.name = name ?? ProcessInfo.processInfo.hostName
        self.http = http
        self.listen = listen
        self.transports = transports
        self.peers = peers
        self.subscriptions = subscriptions
        self.meshSecretFile = meshSecretFile
        self.certificateFile = certificateFile
        self.authorityFile = authorityFile
    }

    /// The keys a configuration file may have; any other key is an error, so that a misspelt
    /// option is not silently ignored.
    private struct File: Decodable {
        var name: String?
        var http: String?
        var http_expose: Bool?
        var listen: String?
        var transports: [String]?
        var peers: [String]?
        var mdns: Bool?
        var subscribe: [String]?
        var mesh_secret_file: String?
        var certificate_file: String?
        var authority_file: String?
        var revocation_file: String?
        var ble_emulated: String?
        var ble_links: Int?
        var ble_psm: Int?
        var ble_adapter: String?
        var cloud: [String]?
        var cloud_credentials_file: String?
        var cloud_ca_file: String?
        var cloud_certificate_file: String?
        var cloud_key_file: String?
        var cloud_store_and_forward: Bool?
        var cloud_stored_max_age_s: Double?
        var cloud_stored_max_bytes: Int?
        var role: String?
        var release_startup_memory: Bool?
        var pending_handshakes: Int?
        var lazy_push_hold_ms: Int?
        var tombstone_lifetime_s: Int?
        var pending_handshakes_per_source: Int?
        var handshake_deadline_s: Double?
        var clock_skew_allowance: String?
        var conflicts_per_field: Int?
        var durability: String?
        var log_level: String?
        var log_file_bytes: Int?
        var log_files: Int?
        var admission_allow: [String]?
        var admission_deny: [String]?
        var admission_callback: String?
        var admission_callback_timeout_s: Double?
    }

    static let fileKeys: Set<String> = [
        "name", "http", "http_expose", "listen", "transports", "peers", "mdns", "subscribe", "mesh_secret_file", "certificate_file", "authority_file",
        "revocation_file", "ble_emulated", "ble_links", "ble_psm", "ble_adapter", "cloud", "cloud_credentials_file", "cloud_ca_file", "cloud_certificate_file",
        "cloud_key_file", "cloud_store_and_forward", "cloud_stored_max_age_s", "cloud_stored_max_bytes", "role",
        "release_startup_memory", "pending_handshakes", "lazy_push_hold_ms", "tombstone_lifetime_s", "pending_handshakes_per_source", "handshake_deadline_s", "clock_skew_allowance",
        "conflicts_per_field", "durability", "log_level", "log_file_bytes", "log_files", "admission_allow", "admission_deny", "admission_callback", "admission_callback_timeout_s",
    ]

    /// The command line's options over the file's (a list given on the command line replaces
    /// the file's list).
    public static func resolve(
        dataDirectory: String, configFile: String?, name: String?, http: String?, httpExpose: Bool = false, listen: String?,
        transports: String?, peers: [String], noMDNS: Bool = false, subscriptions: [String], bleEmulated: String? = nil, bleLinks: Int? = nil, blePSM: Int? = nil,
        bleAdapter: String? = nil, cloud: [String] = [], role: String? = nil, clockSkewAllowance: String? = nil,
        durability: String? = nil, logLevel: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(CommandError) -> AgentConfiguration {
        let file = try readFile(configFile, environment: environment)
        let httpText = http ?? file?.http
        let listenText = listen ?? file?.listen
        let transportText = transports ?? file?.transports?.joined(separator: ",")
        let peerTexts = peers.isEmpty ? (file?.peers ?? []) : peers
        var configuration = AgentConfiguration(
            dataDirectory: dataDirectory, name: name ?? file?.name,
            http: try httpText.map { text throws(CommandError) in try LANAddress(parsing: text, option: "--http", listening: true) } ?? defaultHTTP,
            listen: try listenText.map { text throws(CommandError) in try LANAddress(parsing: text, option: "--listen", listening: true) },
            transports: try transportText.map { text throws(CommandError) in try TransportChoice.parseList(text) } ?? [.loopback],
            subscriptions: (file?.subscribe ?? []) + subscriptions,
            meshSecretFile: file?.mesh_secret_file,
            certificateFile: file?.certificate_file,
            authorityFile: file?.authority_file
        )
        configuration.httpExposed = httpExpose || (file?.http_expose ?? false)
        try configuration.checkHTTPExposure()
        for text in peerTexts { configuration.peers.append(try LANAddress(parsing: text, option: "--peer", listening: false)) }
        configuration.mdns = !noMDNS && (file?.mdns ?? true)
        configuration.revocationFile = file?.revocation_file
        configuration.bleEmulatedDirectory = bleEmulated ?? file?.ble_emulated
        if let links = bleLinks ?? file?.ble_links {
            guard (1...32).contains(links) else { throw CommandError("--ble-links must be between 1 and 32; got \(links)", exitStatus: 2) }
            configuration.scarceLinks.limit = links
        }
        if let psm = blePSM ?? file?.ble_psm {
            // LE PSMs: 0x01–0x7F fixed (SIG-assigned), 0x80–0xFF dynamic; an advert carries one byte.
            guard (0x80...0xFF).contains(psm) else {
                throw CommandError("--ble-psm must be between 128 and 255 (0x80–0xFF, the LE dynamic range); got \(psm)", exitStatus: 2)
            }
            configuration.blePSM = UInt16(psm)
        }
        if let text = bleAdapter ?? file?.ble_adapter {
            guard let adapter = BluetoothAdapter(text) else {
                throw CommandError("--ble-adapter takes a controller as hciN or AA:BB:CC:DD:EE:FF (`btmgmt info` lists them); got \(text)", exitStatus: 2)
            }
            configuration.bleAdapter = adapter
        }
        try configuration.cloud.read(urls: cloud.isEmpty ? (file?.cloud ?? []) : cloud, file: file.map(cloudKeys))
        configuration.role = try (role ?? file?.role).map { text throws(CommandError) in try AgentRole.parse(text) } ?? .peer
        configuration.releaseStartupMemory = file?.release_startup_memory ?? true
        if let total = file?.pending_handshakes {
            guard (1...4096).contains(total) else { throw CommandError("pending_handshakes must be between 1 and 4096; got \(total)", exitStatus: 2) }
            configuration.pendingHandshakes.total = total
        }
        if let hold = file?.lazy_push_hold_ms {
            guard (0...lazyPushHoldLimit).contains(hold) else {
                throw CommandError("lazy_push_hold_ms must be between 0 (lazy push off) and \(lazyPushHoldLimit); got \(hold)", exitStatus: 2)
            }
            configuration.lazyPushHoldMilliseconds = hold
        }
        if let lifetime = file?.tombstone_lifetime_s {
            guard (0...tombstoneLifetimeLimit).contains(lifetime) else {
                throw CommandError("tombstone_lifetime_s must be between 0 (never reap) and \(tombstoneLifetimeLimit) (ten years); got \(lifetime)", exitStatus: 2)
            }
            configuration.tombstoneLifetimeSeconds = lifetime
        }
        if let perSource = file?.pending_handshakes_per_source {
            guard (1...4096).contains(perSource) else {
                throw CommandError("pending_handshakes_per_source must be between 1 and 4096; got \(perSource)", exitStatus: 2)
            }
            configuration.pendingHandshakes.perSource = perSource
        }
        if let seconds = file?.handshake_deadline_s {
            guard seconds >= 0.1, seconds <= 300 else {
                throw CommandError("handshake_deadline_s must be between 0.1 and 300 seconds; got \(seconds)", exitStatus: 2)
            }
            configuration.pendingHandshakes.setDeadline(.milliseconds(Int64(seconds * 1_000)))
        }
        if let text = clockSkewAllowance ?? file?.clock_skew_allowance {
            configuration.clockSkewAllowance = try Duration(parsing: text, option: "--clock-skew-allowance", limit: clockSkewAllowanceLimit)
        }
        if let count = file?.conflicts_per_field {
            guard (0...64).contains(count) else {
                throw CommandError("conflicts_per_field must be between 0 (keep none) and 64; got \(count)", exitStatus: 2)
            }
            configuration.conflictsPerField = count
        }
        if let text = durability ?? file?.durability {
            configuration.durability = try Durability.parse(text, option: durability != nil ? "--durability" : "durability")
        }
        if let text = logLevel ?? file?.log_level {
            guard let level = Logger.Level(rawValue: text.lowercased()) else {
                let levels = Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")
                throw CommandError("\(logLevel != nil ? "--log-level" : "log_level") \(text.debugDescription) is not one of \(levels)", exitStatus: 2)
            }
            configuration.logLevel = level
        }
        if let bytes = file?.log_file_bytes {
            let range = RotatingLogFile.Limits.fileBytesRange
            guard range.contains(bytes) else {
                throw CommandError("log_file_bytes must be between \(range.lowerBound) and \(range.upperBound); got \(bytes)", exitStatus: 2)
            }
            configuration.logLimits.fileBytes = bytes
        }
        if let count = file?.log_files {
            let range = RotatingLogFile.Limits.filesRange
            guard range.contains(count) else {
                throw CommandError("log_files must be between \(range.lowerBound) and \(range.upperBound); got \(count)", exitStatus: 2)
            }
            configuration.logLimits.files = count
        }
        if let file { configuration.admission = try admissionPolicy(file) }
        return configuration
    }

    private static func admissionPolicy(_ file: File) throws(CommandError) -> AdmissionPolicy {
        var allow: [AdmissionRule] = [], deny: [AdmissionRule] = []
        for text in file.admission_allow ?? [] { allow.append(try AdmissionRule(parsing: text, key: "admission_allow")) }
        for text in file.admission_deny ?? [] { deny.append(try AdmissionRule(parsing: text, key: "admission_deny")) }
        if let url = file.admission_callback {
            guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme ?? ""), parsed.host != nil else {
                throw CommandError("admission_callback must be an http:// or https:// URL, such as http://127.0.0.1:9000/admit; got \(url.debugDescription)", exitStatus: 2)
            }
        }
        var timeout = AdmissionPolicy.defaultCallbackTimeout
        if let seconds = file.admission_callback_timeout_s {
            guard file.admission_callback != nil else { throw CommandError("admission_callback_timeout_s goes with admission_callback", exitStatus: 2) }
            guard seconds >= 0.1, seconds <= 120 else {
                throw CommandError("admission_callback_timeout_s must be between 0.1 and 120 seconds; got \(seconds)", exitStatus: 2)
            }
            timeout = .milliseconds(Int64(seconds * 1_000))
        }
        return AdmissionPolicy(allow: allow, deny: deny, callback: file.admission_callback, callbackTimeout: timeout)
    }

    /// Throws unless `http` is a loopback address or the API was exposed on purpose: anything
    /// that reaches the API with the token can read and write the store, and it speaks plain
    /// HTTP, so the token and the data cross the network readable.
    public func checkHTTPExposure() throws(CommandError) {
        guard !httpExposed, !ServedHosts.isLoopback(http.host) else { return }
        throw CommandError("""
            --http \(http) would serve the HTTP API beyond this machine, to anyone who reaches that address and holds the token, \
            over plain HTTP (the token and the data cross the network readable). Keep it on 127.0.0.1 and reach it through \
            `ssh -L 4747:127.0.0.1:4747 HOST`, or, to expose it anyway, add --http-expose (http_expose = true in the configuration file)
            """, exitStatus: 2)
    }

    /// The configuration file's cloud keys.
    struct CloudFileKeys {
        var credentialsFile, caFile, certificateFile, keyFile: String?
        var storeAndForward: Bool?
        var maxAgeSeconds: Double?
        var maxBytes: Int?

    }

    private static func cloudKeys(_ file: File) -> CloudFileKeys {
        CloudFileKeys(
            credentialsFile: file.cloud_credentials_file, caFile: file.cloud_ca_file, certificateFile: file.cloud_certificate_file,
            keyFile: file.cloud_key_file, storeAndForward: file.cloud_store_and_forward, maxAgeSeconds: file.cloud_stored_max_age_s,
            maxBytes: file.cloud_stored_max_bytes
        )
    }

    /// The configuration file's options (TOML, or JSON for a name ending in .json) under the
    /// ARCUS_* environment variables (ConfigurationOverrides); the command line then wins over both.
    private static func readFile(_ path: String?, environment: [String: String]) throws(CommandError) -> File? {
        var object: [String: Any] = [:]
        if let path { object = try ConfigurationFile.read(path, keys: fileKeys) }
        let overrides = try ConfigurationOverrides.read(environment, keys: fileKeys)
        guard path != nil || !overrides.isEmpty else { return nil }
        object.merge(overrides) { _, override in override }
        do {
            let data = try JSONSerialization.data(withJSONObject: object)
            return try JSONDecoder().decode(File.self, from: data)
        } catch {
            let source = [path.map { "the configuration file \($0)" }, overrides.isEmpty ? nil : "the ARCUS_* variables"].compactMap { $0 }
            throw CommandError("\(source.joined(separator: " and ")): an option has the wrong type: \(ConfigurationFile.describe(error))", exitStatus: 2)
        }
    }

}

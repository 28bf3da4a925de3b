import ArcusAgent

extension EmbeddedAgent {
    /// How to run the embedded agent: the same settings as `arcus agent`'s command line and
    /// configuration file (Docs/Agent.md), and the same defaults. Nothing here opens a port for
    /// an HTTP API: the program is the API.
    public struct Configuration: Sendable {
        /// Where the store, the identity and the settings live; made on first use (mode 0700).
        public var dataDirectory: String
        /// The agent's configuration file (TOML, as `arcus agent --config`), read first; the
        /// properties set here override it.
        public var file: String?
        /// The name peers see (default: the host name).
        public var name: String?
        /// Links to run: `lan`, `ble`, `cloud`, `loopback` (default: the file's, else loopback).
        public var transports: [String]?
        /// Where the LAN transport listens, `HOST:PORT` (port 0: the system picks).
        public var listen: String?
        /// LAN peers to dial, `HOST:PORT`.
        public var peers: [String] = []
        /// Whether to find LAN peers through avahi-daemon (mDNS).
        public var mdns = true
        /// A file holding the mesh's shared secret (`arcus mesh secret`).
        public var meshSecretFile: String?
        /// This device's certificate and the authority's public key, for a mesh of certificates.
        public var certificateFile: String?
        public var authorityFile: String?
        /// Sync subscriptions (DQL SELECTs) registered at start, besides those the store keeps.
        public var subscriptions: [String] = []
        /// How many values that lost a concurrent write to keep per field (0: the conflict view is off).
        public var conflictsPerField: Int?

        public init(dataDirectory: String, file: String? = nil, name: String? = nil, transports: [String]? = nil) {
            self.dataDirectory = dataDirectory
            self.file = file
            self.name = name
            self.transports = transports
        }

        /// The agent's own configuration, checked as `arcus agent` checks its options.
        func resolved() throws(CommandError) -> AgentConfiguration {
            var configuration = try AgentConfiguration.resolve(
                dataDirectory: dataDirectory, configFile: file, name: name, http: nil, listen: listen,
                transports: transports?.joined(separator: ","), peers: peers, noMDNS: !mdns, subscriptions: subscriptions
            )
            if let meshSecretFile { configuration.meshSecretFile = meshSecretFile }
            if let certificateFile { configuration.certificateFile = certificateFile }
            if let authorityFile { configuration.authorityFile = authorityFile }
            if let conflictsPerField {
                guard (0...64).contains(conflictsPerField) else { throw CommandError("conflictsPerField must be between 0 (keep none) and 64; got \(conflictsPerField)") }
                configuration.conflictsPerField = conflictsPerField
            }
            // Nothing to give back to the system after start: the program keeps running.
            configuration.releaseStartupMemory = false
            return configuration
        }
    }
}

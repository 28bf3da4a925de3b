import ArcusCloud
import Foundation

/// How the agent reaches a NATS relay (`--transports cloud`): `--cloud URL` (repeatable, for a
/// cluster) or, in a configuration file, `cloud` and the `cloud_*` keys.
public struct CloudConfiguration: Sendable {
    /// `nats://HOST:PORT` or `tls://HOST:PORT`, with `user:password@` if the relay wants them.
    public var urls: [String] = []
    /// A NATS credentials file (a user JWT and its nkey seed, as `nsc` writes them).
    public var credentialsFile: String?
    /// TLS: the authority that signed the relay's certificate, and this agent's certificate and
    /// key where the relay asks for one.
    public var tls: NATSTLS?
    /// Whether frames for peers that are away wait in the relay's JetStream stream.
    public var storeAndForward = true
    public var storedFramesMaxAge: Duration = .seconds(3_600)
    public var storedFramesMaxBytes = 256 << 20

    public init() {}

    /// Checks the URLs' form, so that a typo is an error at start and not a silent retry loop.
    package static func parse(_ texts: [String], option: String) throws(CommandError) -> [String] {
        for text in texts {
            guard let url = URL(string: text), let scheme = url.scheme, ["nats", "tls"].contains(scheme.lowercased()),
                  let host = url.host, !host.isEmpty, url.port != nil
            else {
                let shown = NATSConnection.withoutCredentials(text).debugDescription
                throw CommandError("\(option): \(shown) is not a relay URL: write nats://HOST:PORT (or tls://HOST:PORT)", exitStatus: 2)
            }
        }
        return texts
    }

    /// The transport's settings for this agent, in the mesh of `meshHash`.
    func settings(meshHash: String, name: String) -> CloudSettings {
        var options = NATSOptions(urls: urls)
        options.name = "arcus \(name)"
        options.credentialsFile = credentialsFile
        options.tls = tls
        var settings = CloudSettings(connection: options, meshHash: meshHash)
        settings.storeAndForward = storeAndForward
        settings.storedFramesMaxAge = storedFramesMaxAge
        settings.storedFramesMaxBytes = storedFramesMaxBytes
        return settings
    }
}

/// What an agent is for. A hub is an always-on peer (a server, a gateway) that subscribes to
/// every collection and keeps what it gets, so that devices that never meet still converge
/// through it.
public enum AgentRole: String, Sendable, CaseIterable {
    case peer, hub

    static func parse(_ text: String) throws(CommandError) -> AgentRole {
        guard let role = AgentRole(rawValue: text.lowercased()) else {
            throw CommandError("--role: \(text.debugDescription) is not a role; the roles are peer and hub", exitStatus: 2)
        }
        return role
    }
}

extension CloudConfiguration {
    /// Takes the relay URLs and the configuration file's `cloud_*` keys, checking each.
    mutating func read(urls: [String], file: AgentConfiguration.CloudFileKeys?) throws(CommandError) {
        self.urls = try Self.parse(urls, option: "--cloud")
        guard let file else { return }
        credentialsFile = file.credentialsFile
        if file.caFile != nil || file.certificateFile != nil || file.keyFile != nil {
            guard (file.certificateFile == nil) == (file.keyFile == nil) else {
                throw CommandError("cloud_certificate_file and cloud_key_file go together: give both, or neither", exitStatus: 2)
            }
            tls = NATSTLS(caFile: file.caFile, certificateFile: file.certificateFile, keyFile: file.keyFile)
        }
        if let storeAndForward = file.storeAndForward { self.storeAndForward = storeAndForward }
        if let seconds = file.maxAgeSeconds {
            guard seconds >= 1, seconds <= 30 * 86_400 else {
                throw CommandError("cloud_stored_max_age_s must be between 1 and 2592000 (30 days); got \(seconds)", exitStatus: 2)
            }
            storedFramesMaxAge = .milliseconds(Int64(seconds * 1_000))
        }
        if let bytes = file.maxBytes {
            guard bytes >= 1 << 20 else { throw CommandError("cloud_stored_max_bytes must be at least 1048576 (1 MiB); got \(bytes)", exitStatus: 2) }
            storedFramesMaxBytes = bytes
        }
    }
}

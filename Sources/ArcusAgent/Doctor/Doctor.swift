import ArcusCRDT
import ArcusLAN
import ArcusMesh
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `arcus doctor`: looks at what the agent would need with `configuration` — its data directory,
/// the mesh credential, and each transport's daemon, kernel support and permissions — and says
/// what to do about anything missing. It changes nothing and opens no store, so it is safe to run
/// beside a running agent. Transports not configured are checked too; their failures are marked
/// `unused` and do not make the verdict fail.
public struct Doctor: Sendable {
    public let configuration: AgentConfiguration

    public init(configuration: AgentConfiguration) {
        self.configuration = configuration
    }

    public func run() -> [DoctorCheck] {
        var checks = [dataDirectory(), credential()]
        checks += lan().map { $0.unless(configured: configuration.transports.contains(.lan)) }
        checks += bluetooth().map { $0.unless(configured: configuration.transports.contains(.ble)) }
        checks += [cloud().unless(configured: configuration.transports.contains(.cloud))]
        return checks
    }

    /// Whether nothing configured fails.
    public static func passes(_ checks: [DoctorCheck]) -> Bool {
        !checks.contains { $0.status == .failure }
    }

    // MARK: Store

    func dataDirectory() -> DoctorCheck {
        let path = configuration.dataDirectory
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                return DoctorCheck(area: "store", name: "data directory", status: .failure, detail: "\(path) is a file, not a directory",
                                   fix: "give --data a directory (it is created if missing)")
            }
            guard access(path, W_OK) == 0 else {
                return DoctorCheck(area: "store", name: "data directory", status: .failure, detail: "\(path) is not writable by this user",
                                   fix: "run the agent as the directory's owner, or chown it to the agent's user")
            }
            return DoctorCheck(area: "store", name: "data directory", status: .ok, detail: "\(path) exists and is writable")
        }
        let parent = (path as NSString).deletingLastPathComponent
        guard access(parent.isEmpty ? "." : parent, W_OK) == 0 else {
            return DoctorCheck(area: "store", name: "data directory", status: .failure,
                               detail: "\(path) does not exist and \(parent.isEmpty ? "." : parent) is not writable",
                               fix: "create it for the agent's user: install -d -m 0700 -o USER \(path)")
        }
        return DoctorCheck(area: "store", name: "data directory", status: .ok, detail: "\(path) will be created at the first start")
    }

    // MARK: Mesh

    func credential() -> DoctorCheck {
        let networked = configuration.transports.contains { $0 != .loopback }
        if configuration.meshSecretFile == nil && configuration.certificateFile == nil && configuration.authorityFile == nil {
            return DoctorCheck(
                area: "mesh", name: "credential", status: networked ? .failure : .warning,
                detail: "no mesh credential: every link is refused",
                fix: "arcus mesh secret secret (32 random bytes, mode 0600; the same file on every device), then {\"mesh_secret_file\": \"secret\"} in --config; "
                    + "or a certificate: certificate_file and authority_file (arcus help mesh)"
            )
        }
        // The certificate must be for this agent's key; the secret does not care whose.
        let identityFile = URL(fileURLWithPath: configuration.dataDirectory).appendingPathComponent("identity")
        let identity = FileManager.default.fileExists(atPath: identityFile.path) ? try? PeerIdentity.load(from: identityFile) : nil
        if configuration.certificateFile != nil && identity == nil {
            return DoctorCheck(
                area: "mesh", name: "credential", status: .failure,
                detail: "this agent has no identity yet, so no certificate can be for it",
                fix: "arcus mesh identity --data \(configuration.dataDirectory) (creates it and prints its public key), then arcus mesh issue --public-key KEY on the authority"
            )
        }
        do {
            switch try MeshCredentialFiles.load(configuration, for: identity ?? PeerIdentity()) {
            case .certificate(let certificate, _)?:
                let expiry = certificate.expiresAt.map { "until \($0.formatted(.iso8601))" } ?? "without expiry"
                let role = certificate.permissions.relay ? "a relay" : "not a relay: its peers take only its own writes from it"
                let detail = "a certificate for \(certificate.name) (this agent), \(expiry), \(role), verified by the authority"
                if let expiresAt = certificate.expiresAt, expiresAt.timeIntervalSinceNow < 30 * 86_400 {
                    return DoctorCheck(area: "mesh", name: "credential", status: .warning, detail: detail + "; it expires within 30 days",
                                       fix: "issue a new one with `arcus mesh issue` and replace \(configuration.certificateFile ?? "certificate_file")")
                }
                if configuration.role == .hub && !certificate.permissions.relay {
                    return DoctorCheck(area: "mesh", name: "credential", status: .warning,
                                       detail: detail + "; a hub passes on everyone's writes, and its peers refuse them from a peer that is not a relay",
                                       fix: "issue its certificate with `arcus mesh issue --relay`")
                }
                return DoctorCheck(area: "mesh", name: "credential", status: .ok, detail: detail)
            case .sharedSecret(let secret)?:
                return DoctorCheck(area: "mesh", name: "credential", status: .ok,
                                   detail: "a shared secret, readable only by its owner, \(secret.strength); mesh id \(MeshCredential.sharedSecret(secret).meshHash)")
            case nil:
                // Not reached: a configuration naming no credential was answered above.
                return DoctorCheck(area: "mesh", name: "credential", status: .warning, detail: "no mesh credential: every link is refused")
            }
        } catch {
            let fix = configuration.meshSecretFile.map {
                "a secret from `arcus mesh secret FILE` (32 random bytes; the same file on every device), mode 0600 and owned by the agent's user: "
                    + "chmod 600 \($0) if only its mode is wrong"
            }
                ?? "a certificate issued for this agent's key by the authority whose authority.pub is given, not expired"
            return DoctorCheck(area: "mesh", name: "credential", status: .failure, detail: error.message, fix: fix)
        }
    }

    // MARK: LAN

    func lan() -> [DoctorCheck] {
        var checks: [DoctorCheck] = []
        switch AvahiService.probeDaemon() {
        case .success(let version):
            checks.append(DoctorCheck(area: "lan", name: "avahi-daemon", status: .ok, detail: "\(version) answers on the system bus: mDNS discovery works"))
        case .failure(let error):
            checks.append(DoctorCheck(
                area: "lan", name: "avahi-daemon", status: configuration.peers.isEmpty ? .failure : .warning,
                detail: error == .noDaemon ? "not running (or the D-Bus system bus is not): mDNS discovery is off" : "\(error)",
                fix: "systemctl start avahi-daemon (Tools/start-avahi.sh in a container), or give peers with --peer HOST:PORT"
                    + (configuration.peers.isEmpty ? "" : " (you give \(configuration.peers.count), so the agent still finds those)")
            ))
        }
        if let listen = configuration.listen, listen.port != 0 {
            checks.append(listenAddress(listen))
        }
        return checks
    }

    /// Binds the listen address for a moment: taken by another process, or not an address of this machine.
    func listenAddress(_ address: LANAddress) -> DoctorCheck {
        let result = Self.tryBind(host: address.host, port: address.port)
        if let result {
            return DoctorCheck(area: "lan", name: "listen address", status: .failure, detail: "cannot listen on \(address): \(result)",
                               fix: "pick another --listen port (or 0 for any), or stop what holds it (ss -ltnp 'sport = :\(address.port)')")
        }
        return DoctorCheck(area: "lan", name: "listen address", status: .ok, detail: "\(address) is free")
    }

    /// nil if a TCP socket could bind `host:port` (IPv4 or IPv6 literal), else why not.
    static func tryBind(host: String, port: Int) -> String? {
        var storage = sockaddr_storage()
        var length: socklen_t
        let family: Int32
        if var v4 = Optional(sockaddr_in()), inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = in_port_t(UInt16(port).bigEndian)
            withUnsafeBytes(of: v4) { bytes in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: bytes) } }
            (length, family) = (socklen_t(MemoryLayout<sockaddr_in>.size), AF_INET)
        } else if var v6 = Optional(sockaddr_in6()), inet_pton(AF_INET6, host, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = in_port_t(UInt16(port).bigEndian)
            withUnsafeBytes(of: v6) { bytes in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: bytes) } }
            (length, family) = (socklen_t(MemoryLayout<sockaddr_in6>.size), AF_INET6)
        } else {
            return "\(host) is not an IP address"
        }
        let descriptor = socket(family, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return String(cString: strerror(errno)) }
        defer { close(descriptor) }
        var yes: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) } }
        return bound == 0 ? nil : String(cString: strerror(errno))
    }

    // MARK: Not built yet
}

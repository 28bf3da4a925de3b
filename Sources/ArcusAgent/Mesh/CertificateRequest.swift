import ArcusCodec
import ArcusMesh
import Foundation

/// `arcus mesh issue`: what a certificate should say, and where to write it.
public struct CertificateRequest {
    /// Where the peer's public key comes from.
    public enum PublicKeySource {
        /// 128 hex digits, as a peer prints its own public key.
        case hex(String)
        /// The peer's identity file, when the operator holds it (when provisioning a device).
        case identityFile(String)
    }

    public var authority: AuthorityDirectory
    public var peerName: String
    public var publicKey: PublicKeySource
    /// Collection names, or "*" for all; empty for none.
    public var read: [String]
    public var write: [String]
    /// Whether the peer may relay: pass on other writers' changes, which its peers then take on
    /// its word (hubs, gateways, the devices a multi-hop mesh routes through).
    public var relay: Bool
    /// Days until the certificate expires.
    public var days: Int
    public var output: String

    public init(
        authority: AuthorityDirectory, peerName: String, publicKey: PublicKeySource, read: [String], write: [String], relay: Bool = false,
        days: Int = Self.defaultDays, output: String
    ) {
        self.authority = authority
        self.peerName = peerName
        self.publicKey = publicKey
        self.read = read
        self.write = write
        self.relay = relay
        self.days = days
        self.output = output
    }

    /// A year: a device in the field is renewed once a year, and a certificate stolen with it
    /// lapses within a year even if no one revokes it (`arcus mesh revoke` is faster).
    public static let defaultDays = 365
    /// Longest validity accepted: ten years.
    static let maximumDays = 3_650

    /// Signs the certificate and writes it (its binary encoding) to `output`; returns a JSON line
    /// describing it. Bad input is a `CommandError` with exit status 2 that says what to change.
    public func issue(now: Date = Date()) throws -> String {
        let key = try peerPublicKey()
        guard (1...Self.maximumDays).contains(days) else {
            throw CommandError("--days must be between 1 and \(Self.maximumDays); got \(days)", exitStatus: 2)
        }
        let permissions = CollectionPermissions(read: CollectionSet(read), write: CollectionSet(write), relay: relay)
        let expiresAt = now.addingTimeInterval(Double(days) * 86_400)
        let certificate: PeerCertificate
        do {
            certificate = try authority.loadAuthority().issue(to: key, name: peerName, permissions: permissions, expiresAt: expiresAt)
        } catch let error as CertificateError {
            throw CommandError("\(error)", exitStatus: 2)
        }
        do {
            try Data(certificate.encoded).write(to: URL(fileURLWithPath: output), options: .atomic)
        } catch {
            throw CommandError("cannot write the certificate to \(output): \(error.localizedDescription)")
        }
        let expiry = certificate.expiresAt.map { jsonString($0.formatted(.iso8601)) } ?? "null"
        return """
            {"peer": \(jsonString(certificate.name)), "peer_id": "\(certificate.peerID)", \
            "read": \(jsonList(permissions.read.names)), "write": \(jsonList(permissions.write.names)), "relay": \(relay), \
            "expires": \(expiry), "certificate": \(jsonString(output)), "bytes": \(certificate.encoded.count)}
            """
    }

    private func peerPublicKey() throws -> PeerPublicKey {
        switch publicKey {
        case .hex(let text):
            guard let bytes = Hex.decode(text) else {
                throw CommandError("--public-key must be hex digits (128 of them); \"\(text.prefix(16))…\" is not", exitStatus: 2)
            }
            do {
                return try PeerPublicKey(bytes: bytes)
            } catch {
                throw CommandError("--public-key: \(error)", exitStatus: 2)
            }
        case .identityFile(let path):
            do {
                return try PeerIdentity.load(from: URL(fileURLWithPath: path)).publicKey
            } catch {
                throw CommandError("--identity: \(error)", exitStatus: 2)
            }
        }
    }

    private func jsonList(_ names: [String]) -> String {
        "[" + names.map(jsonString).joined(separator: ", ") + "]"
    }
}

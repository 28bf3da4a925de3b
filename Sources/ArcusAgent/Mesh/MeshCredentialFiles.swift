import ArcusMesh
import Foundation

/// The mesh credential an agent's configuration names: the shared secret in `mesh_secret_file`,
/// or the certificate in `certificate_file` with the authority's public key in `authority_file`.
/// Every way these can be wrong is a `CommandError` (exit status 2) that says what to do; the
/// agent and `arcus doctor` load it the same way.
package enum MeshCredentialFiles {
    /// nil when the configuration names no credential (the agent then refuses every link).
    package static func load(_ configuration: AgentConfiguration, for identity: PeerIdentity, now: Date = Date()) throws(CommandError) -> MeshCredential? {
        switch (configuration.meshSecretFile, configuration.certificateFile, configuration.authorityFile) {
        case (nil, nil, nil):
            return nil
        case (let secret?, nil, nil):
            return .sharedSecret(try sharedSecret(secret))
        case (nil, let certificate?, let authority?):
            return try certified(certificate: certificate, authority: authority, identity: identity, now: now)
        case (nil, _?, nil):
            throw CommandError("certificate_file needs authority_file too: the authority.pub that `arcus mesh init` made, which checks every peer's certificate", exitStatus: 2)
        case (nil, nil, _?):
            throw CommandError("authority_file needs certificate_file too: this agent's certificate, from `arcus mesh issue --out`", exitStatus: 2)
        default:
            throw CommandError("give either mesh_secret_file or certificate_file with authority_file, not both: a mesh uses one or the other", exitStatus: 2)
        }
    }

    /// The secret in the file at `path`: owner-only, and strong enough (`MeshSecret`), or a
    /// `CommandError` that says how to make one (`arcus mesh secret`).
    package static func sharedSecret(_ path: String) throws(CommandError) -> MeshSecret {
        do {
            guard let bytes = try SecretFile.read(at: path, maximumBytes: MeshSecret.maximumBytes) else {
                throw CommandError("the mesh secret file \(path) does not exist; make one with `arcus mesh secret \(path)`", exitStatus: 2)
            }
            return try MeshSecret(bytes: bytes)
        } catch let error as CommandError {
            throw error
        } catch {
            throw CommandError("cannot use the mesh secret file \(path): \(error)", exitStatus: 2)
        }
    }

    static func certified(certificate path: String, authority authorityPath: String, identity: PeerIdentity, now: Date) throws(CommandError) -> MeshCredential {
        let authority = try authorityKey(authorityPath)
        let bytes = try read(path, limit: PeerCertificate.Limits.encodedBytes, what: "certificate")
        let certificate: PeerCertificate
        do {
            certificate = try PeerCertificate(decoding: bytes)
        } catch {
            throw CommandError("\(path) is not an Arcus certificate: \(error). Issue one with `arcus mesh issue --out`", exitStatus: 2)
        }
        guard certificate.peerID == identity.peerID else {
            throw CommandError(
                "the certificate \(path) admits peer \(certificate.peerID) (\(certificate.name)), not this agent (\(identity.peerID)). "
                    + "Issue one for this agent's key: `arcus mesh identity --data DIR` prints it for `arcus mesh issue --public-key`",
                exitStatus: 2
            )
        }
        do {
            try certificate.verify(authority: authority, now: now)
        } catch {
            throw CommandError("the certificate \(path) does not verify with the authority in \(authorityPath): \(error)", exitStatus: 2)
        }
        return .certificate(certificate, authority: authority)
    }

    static func authorityKey(_ path: String) throws(CommandError) -> AuthorityPublicKey {
        let text = String(decoding: try read(path, limit: 256, what: "authority public key"), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        guard let bytes = Hex.decode(text), let key = AuthorityPublicKey(bytes: bytes) else {
            throw CommandError("\(path) does not hold an authority public key (64 hex digits, as authority.pub from `arcus mesh init`)", exitStatus: 2)
        }
        return key
    }

    /// A public file (a certificate is shown to every peer anyway), read whole within `limit`.
    private static func read(_ path: String, limit: Int, what: String) throws(CommandError) -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw CommandError("cannot read the \(what) file \(path): it does not exist or is not readable", exitStatus: 2)
        }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: limit + 1)) ?? Data()
        guard data.count <= limit else { throw CommandError("\(path) is larger than any \(what) (\(limit) bytes)", exitStatus: 2) }
        return Array(data)
    }
}

import Foundation

/// Why a certificate was not issued or not accepted. Each case names the certificate's peer when
/// it is known, so that an operator can tell which device to re-issue.
public enum CertificateError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The bytes are not a certificate: cut short, over a limit, or with bytes left over.
    case malformed(String)
    /// A format version this build does not read.
    case unsupportedVersion(UInt8)
    /// The signature does not verify with the mesh authority's key: another mesh's certificate,
    /// or one altered after it was signed.
    case notSignedByAuthority(peer: String)
    /// The certificate's expiry has passed.
    case expired(peer: String, at: Date)
    /// A field given for issuance breaks a limit (too long a name, too many collections).
    case invalidField(String)
    /// The certificate names another key than the one the peer proved it holds.
    case notForThisPeer(peer: String)
    /// The mesh authority revoked the peer (`RevocationList`).
    case revoked(peer: String)

    public var description: String {
        switch self {
        case .malformed(let why):
            return "the certificate is malformed: \(why)"
        case .unsupportedVersion(let version):
            return "the certificate has format version \(version); this build reads versions "
                + "\(PeerCertificate.readableVersions.lowerBound) to \(PeerCertificate.readableVersions.upperBound)"
        case .notSignedByAuthority(let peer):
            return "the certificate of \"\(peer)\" is not signed by this mesh's authority (another mesh, or altered); "
                + "issue it again with `arcus mesh issue --authority DIR`"
        case .expired(let peer, let date):
            return "the certificate of \"\(peer)\" expired at \(date.formatted(.iso8601)); issue a new one with `arcus mesh issue`"
        case .invalidField(let why):
            return "cannot issue the certificate: \(why)"
        case .notForThisPeer(let peer):
            return "the certificate of \"\(peer)\" was issued for another key than the one this peer holds"
        case .revoked(let peer):
            return "\"\(peer)\" was revoked by the mesh authority (`arcus mesh revoke`); it needs a new identity and certificate to rejoin"
        }
    }
}

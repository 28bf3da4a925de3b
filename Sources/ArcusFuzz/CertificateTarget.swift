import ArcusCodec
import ArcusMesh
import Crypto
import Foundation

/// Peer certificates (`PeerCertificate(decoding:)`, then `verify(authority:now:)`): what a peer
/// shows as its proof in the handshake, and what a credentials message carries. A certificate that
/// decodes keeps its bytes exactly and decodes again to itself; verifying never crashes.
enum CertificateTarget {
    static let target = FuzzTarget(
        name: "certificate", entryPoint: "ArcusMesh: PeerCertificate(decoding:), PeerCertificate.verify(authority:now:)", run: run, seeds: seeds
    )

    /// An authority whose key is the same in every run, so that seeds it signed verify.
    static let authority = MeshAuthority(signingKey: try! Curve25519.Signing.PrivateKey(rawRepresentation: [UInt8](repeating: 0x5A, count: 32)))

    static func run(_ bytes: [UInt8]) {
        guard let certificate = try? PeerCertificate(decoding: bytes) else { return }
        FuzzCheck.expect(certificate.encoded == bytes, "a certificate's encoding is not the bytes it was decoded from")
        FuzzCheck.expect((try? PeerCertificate(decoding: certificate.encoded)) == certificate, "a certificate does not decode to itself again")
        _ = try? certificate.verify(authority: authority.publicKey, now: Date(timeIntervalSince1970: 1_800_000_000))
        _ = certificate.permissions.read.contains("orders")
        _ = certificate.permissions.write.names
        _ = certificate.peerID
    }

    static func seeds() -> [[UInt8]] {
        let identity = PeerIdentity(signingKey: try! Curve25519.Signing.PrivateKey(rawRepresentation: [UInt8](repeating: 0x11, count: 32)))
        let permissions: [CollectionPermissions] = [
            .full,
            CollectionPermissions(read: .named(["orders", "menu"]), write: .named(["orders"])),
            CollectionPermissions(read: .named(Set((0..<64).map { "collection-\($0)" })), write: .none),
        ]
        var seeds: [[UInt8]] = []
        for (i, permission) in permissions.enumerated() {
            for expiry in [nil, Date(timeIntervalSince1970: 1_900_000_000)] {
                let certificate = try! authority.issue(to: identity.publicKey, name: "cabin-\(i)", permissions: permission, expiresAt: expiry)
                seeds.append(certificate.encoded)
            }
        }
        return seeds
    }
}

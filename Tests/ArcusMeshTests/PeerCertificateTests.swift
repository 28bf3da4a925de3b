import ArcusCodec
import ArcusMesh
import ArcusTestSupport
import Foundation
import Testing

@Suite("Peer certificates")
struct PeerCertificateTests {
    let authority = MeshAuthority()
    let peer = PeerIdentity()

    @Test("a certificate round-trips through its encoding and verifies with its authority")
    func roundTrip() throws {
        let permissions = CollectionPermissions(read: CollectionSet(["cars", "trucks"]), write: CollectionSet(["cars"]))
        let expiry = Date(timeIntervalSince1970: 2_000_000_000)
        let certificate = try authority.issue(to: peer.publicKey, name: "gate-7", permissions: permissions, expiresAt: expiry)
        let decoded = try PeerCertificate(decoding: certificate.encoded)
        #expect(decoded == certificate)
        #expect(decoded.name == "gate-7" && decoded.peerID == peer.peerID && decoded.expiresAt == expiry)
        #expect(decoded.permissions.read.contains("trucks") && !decoded.permissions.write.contains("trucks"))
        try decoded.verify(authority: authority.publicKey, now: expiry - 1)

        let everything = try authority.issue(to: peer.publicKey, name: "hub", permissions: CollectionPermissions(read: CollectionSet(["*"]), write: .none))
        let decodedEverything = try PeerCertificate(decoding: everything.encoded)
        #expect(decodedEverything.permissions.read == .all && decodedEverything.expiresAt == nil)
        #expect(!decodedEverything.permissions.write.contains("cars"))
    }

    @Test("a certificate signed by another authority is refused")
    func otherAuthority() throws {
        let certificate = try MeshAuthority().issue(to: peer.publicKey, name: "intruder", permissions: .full)
        #expect(throws: CertificateError.notSignedByAuthority(peer: "intruder")) {
            try certificate.verify(authority: authority.publicKey)
        }
    }

    @Test("an expired certificate is refused, naming the peer and the time")
    func expired() throws {
        let expiry = Date(timeIntervalSince1970: 1_700_000_000)
        let certificate = try authority.issue(to: peer.publicKey, name: "old", permissions: .full, expiresAt: expiry)
        #expect(throws: CertificateError.expired(peer: "old", at: expiry)) {
            try certificate.verify(authority: authority.publicKey, now: expiry + 1)
        }
    }

    @Test("fields over their limits are refused at issue")
    func limits() {
        #expect(throws: CertificateError.self) { try authority.issue(to: peer.publicKey, name: "", permissions: .full) }
        #expect(throws: CertificateError.self) {
            try authority.issue(to: peer.publicKey, name: String(repeating: "n", count: 129), permissions: .full)
        }
        let tooMany = CollectionPermissions(read: CollectionSet((0...64).map { "c\($0)" }), write: .none)
        #expect(throws: CertificateError.self) { try authority.issue(to: peer.publicKey, name: "p", permissions: tooMany) }
    }

    @Test("any altered byte, cut or extension of a certificate is refused with an error, never a crash")
    func alteredBytes() throws {
        let certificate = try authority.issue(
            to: peer.publicKey, name: "sensor", permissions: CollectionPermissions(read: CollectionSet(["a", "b"]), write: .all),
            expiresAt: Date(timeIntervalSince1970: 4_000_000_000)
        )
        let bytes = certificate.encoded
        for seed in SeededRandom.seeds(count: 2, test: "altered certificates") {
            print("altered certificates: seed \(seed) (replay with ARCUS_TEST_SEED=\(seed))")
            var random = SeededRandom(seed: seed)
            for _ in 0..<300 {
                var altered = bytes
                switch Int.random(in: 0..<3, using: &random) {
                case 0:
                    let index = Int.random(in: altered.indices, using: &random)
                    altered[index] ^= UInt8.random(in: 1...255, using: &random)
                case 1:
                    altered = Array(altered.prefix(Int.random(in: 0..<altered.count, using: &random)))
                default:
                    altered += (0..<Int.random(in: 1...8, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                }
                #expect(throws: CertificateError.self) {
                    try PeerCertificate(decoding: altered).verify(authority: authority.publicKey, now: Date(timeIntervalSince1970: 0))
                }
            }
        }
    }

    @Test("a huge announced count is refused before anything is allocated")
    func hugeCount() throws {
        let certificate = try authority.issue(to: peer.publicKey, name: "p", permissions: .full)
        var bytes = Array(certificate.encoded.prefix(1 + 64 + 2))
        bytes += [0xFF, 0xFF, 0xFF, 0xFF, 0x0F]
        #expect(throws: CertificateError.self) { try PeerCertificate(decoding: bytes) }
    }

    @Test("an expiry at the ends of 64 bits decodes and is judged without trapping")
    func extremeExpiry() throws {
        let certificate = try authority.issue(to: peer.publicKey, name: "p", permissions: .full, expiresAt: Date(timeIntervalSince1970: 1))
        var bytes = certificate.encoded
        let expiryStart = bytes.count - 64 - 8
        for seconds in [Int64.max, Int64.min, Int64.max - 1] {
            for index in 0..<8 { bytes[expiryStart + index] = UInt8(truncatingIfNeeded: UInt64(bitPattern: seconds) >> (8 * UInt64(index))) }
            let decoded = try PeerCertificate(decoding: bytes)
            #expect(throws: CertificateError.notSignedByAuthority(peer: "p")) { try decoded.verify(authority: authority.publicKey) }
            #expect(decoded.encoded == bytes)
        }
    }

    @Test("an authority key round-trips through its bytes and issues the same signatures' verifier")
    func authorityRoundTrip() throws {
        let copy = try MeshAuthority(serialized: authority.serialized)
        #expect(copy.publicKey == authority.publicKey)
        #expect(throws: CertificateError.self) { try MeshAuthority(serialized: authority.serialized.dropLast()) }
        let certificate = try copy.issue(to: peer.publicKey, name: "p", permissions: .full)
        try certificate.verify(authority: authority.publicKey)
    }
}

import ArcusCodec
import Foundation

/// The mesh authority's list of peers it no longer admits, signed and numbered so that the
/// newest wins wherever copies meet. `arcus mesh revoke` makes it; any one agent given it passes
/// it to every peer it syncs with, and each of them onward: a revoked peer is refused in every
/// handshake, its links and sessions are closed as the list arrives, and its writes are no longer
/// taken from anyone who relays them.
///
/// Encoding (the bytes the authority signs are exactly the ones sent):
/// ```
/// version       1 byte (1)
/// serial        varint: higher replaces lower
/// issued        8 bytes, Unix time in seconds (little-endian, signed)
/// peers         varint count (≤ 4,000), then each PeerID's 16 bytes, in increasing order
/// signature     64 bytes: Ed25519 over "arcus mesh revocations v1" ‖ 0 ‖ everything above
/// ```
public struct RevocationList: Sendable, Hashable {
    public static let version: UInt8 = 1
    /// Most peers one list names: about 64 KB, within a `credentials` item.
    public static let maximumPeers = 4_000
    static let signatureDomain = Array("arcus mesh revocations v1".utf8) + [0]

    public let serial: UInt64
    public let issuedAt: Date
    public let peers: Set<PeerID>
    public let signature: [UInt8]
    private let body: [UInt8]

    /// Signs a list; throws `CertificateError.invalidField` past `maximumPeers`.
    init(serial: UInt64, issuedAt: Date, peers: Set<PeerID>, signedBy authority: MeshAuthority) throws(CertificateError) {
        guard peers.count <= Self.maximumPeers else {
            throw .invalidField("a revocation list names at most \(Self.maximumPeers) peers; this one would name \(peers.count)")
        }
        self.serial = serial
        self.issuedAt = Date(timeIntervalSince1970: issuedAt.timeIntervalSince1970.rounded(.down))
        self.peers = peers
        var writer = ByteWriter(capacity: 32 + 16 * peers.count)
        writer.write(Self.version)
        writer.writeVarint(serial)
        writer.writeFixed64(UInt64(bitPattern: Int64(self.issuedAt.timeIntervalSince1970)))
        writer.writeVarint(peers.count)
        for peer in peers.sorted() { writer.write(contentsOf: peer.bytes) }
        body = writer.take()
        do {
            signature = Array(try authority.signingKey.signature(for: Self.signatureDomain + body))
        } catch {
            throw .invalidField("signing failed: \(error)")
        }
    }

    /// The list as it travels and is stored.
    public var encoded: [UInt8] { body + signature }

    /// Reads a list from untrusted bytes, bounding every count before it allocates. Checks the
    /// format only: call `verify(authority:)` before trusting it.
    public init(decoding bytes: [UInt8]) throws(CertificateError) {
        guard bytes.count <= 1 + 10 + 8 + 3 + 16 * Self.maximumPeers + 64 else {
            throw .malformed("\(bytes.count) bytes is more than any revocation list takes")
        }
        var reader = ByteReader(bytes)
        do {
            let version = try reader.readByte()
            guard version == Self.version else { throw CertificateError.malformed("revocation list format \(version) is not \(Self.version)") }
            serial = try reader.readVarint()
            issuedAt = Date(timeIntervalSince1970: Double(Int64(bitPattern: try reader.readFixed64())))
            let count = try reader.readCount("revoked peers", limit: Self.maximumPeers, minimumItemSize: PeerID.size)
            var peers = Set<PeerID>(minimumCapacity: count)
            var previous: PeerID?
            for _ in 0..<count {
                // Exactly `size` bytes were read, so the id is well-formed.
                let peer = PeerID(bytes: try reader.readBytes(PeerID.size))!
                if let previous, !(previous < peer) { throw CertificateError.malformed("revoked peers out of order or repeated") }
                peers.insert(peer)
                previous = peer
            }
            self.peers = peers
            body = Array(bytes[..<reader.offset])
            signature = Array(try reader.readBytes(64))
            try reader.expectEnd()
        } catch let error as CertificateError {
            throw error
        } catch {
            throw .malformed("\(error)")
        }
    }

    /// Checks that `authority` signed the list.
    public func verify(authority: AuthorityPublicKey) throws(CertificateError) {
        guard authority.isValidSignature(signature, for: Self.signatureDomain + body) else {
            throw .notSignedByAuthority(peer: "revocation list \(serial)")
        }
    }

    public func revokes(_ peer: PeerID) -> Bool { peers.contains(peer) }
}

extension MeshAuthority {
    /// A revocation list naming `peers`, numbered `serial` (higher than any list issued before,
    /// or it will not replace them where they arrived).
    public func revocationList(serial: UInt64, revoking peers: Set<PeerID>, issuedAt: Date = Date()) throws(CertificateError) -> RevocationList {
        try RevocationList(serial: serial, issuedAt: issuedAt, peers: peers, signedBy: self)
    }
}

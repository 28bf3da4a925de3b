import ArcusCodec
import Crypto
import Foundation

/// A mesh authority's statement that a public key belongs to the mesh, under a name, with
/// per-collection permissions, until an optional expiry. Peers exchange certificates in the
/// handshake and check them against the authority's public key, which every peer is given.
///
/// Encoding (compact, and the bytes the authority signs are exactly the ones sent):
/// ```
/// version            1 byte (2; version 1 had no roles, and reads as having none)
/// public key         64 bytes (see PeerPublicKey)
/// name               varint length, UTF-8 (≤ 128 bytes)
/// read, write        each: varint count (≤ 64), then names as varint length, UTF-8 (≤ 128 bytes); "*" = all
/// roles              varint: bit 0 relay (version 2 only; other bits must be 0)
/// expiry             0, or 1 then the Unix time in seconds as 8 bytes (little-endian, signed)
/// signature          64 bytes: Ed25519 over "arcus mesh certificate v<version>" ‖ 0 ‖ everything above
/// ```
///
/// The peer's store writes under the site its public key names (the first 8 bytes of its
/// `PeerID`), so the certificate also says whose writes are whose: every receiver can check what
/// a writer may write, whoever passed its writes on.
public struct PeerCertificate: Sendable, Hashable {
    /// The version this build issues; it reads 1 and 2.
    public static let version: UInt8 = 2
    static let readableVersions: ClosedRange<UInt8> = 1...2
    /// Roles a certificate can grant (the `roles` bits).
    static let relayRole: UInt64 = 1

    /// Bounds that keep a certificate small enough for every link and every decoder's memory.
    public enum Limits {
        public static let nameBytes = 128
        public static let collectionsPerList = 64
        public static let collectionNameBytes = 128
        /// The longest encoding the limits allow.
        public static let encodedBytes = 1 + 64 + 2 + nameBytes + 2 * (1 + collectionsPerList * (2 + collectionNameBytes)) + 1 + 9 + 64
    }

    static func signatureDomain(_ version: UInt8) -> [UInt8] { Array("arcus mesh certificate v\(version)".utf8) + [0] }

    /// The format version of this certificate (what its signature covers).
    public let formatVersion: UInt8

    public let publicKey: PeerPublicKey
    public let name: String
    public let permissions: CollectionPermissions
    /// When the certificate stops being accepted, to the second; nil for never.
    public let expiresAt: Date?
    public let signature: [UInt8]
    /// The bytes the signature covers, exactly as signed or received: verifying them rather than
    /// a re-encoding means no decoded value is ever converted back, and nothing else verifies.
    private let body: [UInt8]

    public var peerID: PeerID { publicKey.peerID }

    /// Signs a new certificate; throws `CertificateError.invalidField` for a field over its limit.
    init(
        publicKey: PeerPublicKey, name: String, permissions: CollectionPermissions, expiresAt: Date?,
        signedBy authority: Curve25519.Signing.PrivateKey
    ) throws(CertificateError) {
        try Self.validate(name: name, permissions: permissions)
        if let expiresAt, abs(expiresAt.timeIntervalSince1970) > 1e15 {
            throw .invalidField("the expiry \(expiresAt) is out of range")
        }
        self.publicKey = publicKey
        self.name = name
        self.permissions = permissions
        self.expiresAt = expiresAt.map { Date(timeIntervalSince1970: $0.timeIntervalSince1970.rounded(.down)) }
        formatVersion = Self.version
        body = Self.body(publicKey: publicKey, name: name, permissions: permissions, expiresAt: self.expiresAt)
        do {
            signature = Array(try authority.signature(for: Self.signatureDomain(Self.version) + body))
        } catch {
            throw .invalidField("signing failed: \(error)")
        }
    }

    /// The certificate as it travels and is stored.
    public var encoded: [UInt8] { body + signature }

    /// Reads a certificate from untrusted bytes, bounding every length before it allocates. This
    /// checks the format only: call `verify(authority:now:)` before trusting it.
    public init(decoding bytes: [UInt8]) throws(CertificateError) {
        guard bytes.count <= Limits.encodedBytes else {
            throw .malformed("\(bytes.count) bytes; a certificate takes at most \(Limits.encodedBytes)")
        }
        var reader = ByteReader(bytes)
        do {
            let version = try reader.readByte()
            guard Self.readableVersions.contains(version) else { throw CertificateError.unsupportedVersion(version) }
            formatVersion = version
            do {
                publicKey = try PeerPublicKey(bytes: try reader.readBytes(PeerPublicKey.size))
            } catch {
                throw CertificateError.malformed("\(error)")
            }
            name = try reader.readString(limit: Limits.nameBytes)
            let read = try Self.readCollections(&reader)
            let write = try Self.readCollections(&reader)
            var relay = false
            if version >= 2 {
                let roles = try reader.readVarint()
                guard roles & ~Self.relayRole == 0 else { throw CertificateError.malformed("unknown roles \(roles)") }
                relay = roles & Self.relayRole != 0
            }
            permissions = CollectionPermissions(read: read, write: write, relay: relay)
            switch try reader.readByte() {
            case 0: expiresAt = nil
            case 1: expiresAt = Date(timeIntervalSince1970: Double(Int64(bitPattern: try reader.readFixed64())))
            case let flag: throw CertificateError.malformed("expiry flag \(flag) is neither 0 nor 1")
            }
            body = Array(bytes[..<reader.offset])
            signature = Array(try reader.readBytes(64))
            try reader.expectEnd()
        } catch let error as CertificateError {
            throw error
        } catch {
            throw .malformed("\(error)")
        }
    }

    /// Checks that `authority` signed this certificate and that it has not expired at `now`.
    public func verify(authority: AuthorityPublicKey, now: Date = Date()) throws(CertificateError) {
        guard authority.isValidSignature(signature, for: Self.signatureDomain(formatVersion) + body) else {
            throw .notSignedByAuthority(peer: name)
        }
        if let expiresAt, expiresAt <= now { throw .expired(peer: name, at: expiresAt) }
    }

    // MARK: Encoding

    /// The encoding of the fields at issue, where the expiry was checked to fit 64 bits.
    private static func body(publicKey: PeerPublicKey, name: String, permissions: CollectionPermissions, expiresAt: Date?) -> [UInt8] {
        var writer = ByteWriter(capacity: 256)
        writer.write(version)
        writer.write(contentsOf: publicKey.bytes)
        writer.writeString(name)
        for set in [permissions.read, permissions.write] {
            let names = set.names
            writer.writeVarint(names.count)
            for name in names { writer.writeString(name) }
        }
        writer.writeVarint(permissions.relay ? relayRole : 0)
        if let expiresAt {
            writer.write(1)
            writer.writeFixed64(UInt64(bitPattern: Int64(expiresAt.timeIntervalSince1970)))
        } else {
            writer.write(0)
        }
        return writer.take()
    }

    private static func readCollections(_ reader: inout ByteReader) throws(CodecError) -> CollectionSet {
        let count = try reader.readCount("collection count", limit: Limits.collectionsPerList)
        var names: [String] = []
        names.reserveCapacity(count)
        for _ in 0..<count { names.append(try reader.readString(limit: Limits.collectionNameBytes)) }
        return CollectionSet(names)
    }

    private static func validate(name: String, permissions: CollectionPermissions) throws(CertificateError) {
        guard !name.isEmpty, name.utf8.count <= Limits.nameBytes else {
            throw .invalidField("a peer name takes 1 to \(Limits.nameBytes) bytes; \"\(name)\" takes \(name.utf8.count)")
        }
        for (kind, set) in [("read", permissions.read), ("write", permissions.write)] {
            let names = set.names
            guard names.count <= Limits.collectionsPerList else {
                throw .invalidField("at most \(Limits.collectionsPerList) \(kind) collections; got \(names.count)")
            }
            for collection in names where collection.isEmpty || collection.utf8.count > Limits.collectionNameBytes {
                throw .invalidField("a collection name takes 1 to \(Limits.collectionNameBytes) bytes; \"\(collection)\" takes \(collection.utf8.count)")
            }
        }
    }
}

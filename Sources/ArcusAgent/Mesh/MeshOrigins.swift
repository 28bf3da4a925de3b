import ArcusCRDT
import ArcusCodec
import ArcusMesh
import ArcusStore
import ArcusSync
import Foundation
import Synchronization

/// The writers of a certificate mesh, as sync asks about them (`SyncOrigins`): each writer's
/// site is the one its key names (`SiteID(peer:)`), so its certificate says what that site may
/// write. Certificates come from the handshakes this agent makes and from relays, which pass on
/// the certificates of the writers whose events they pass on; each is checked against the mesh
/// authority and kept in the store (`origin/<site>` sync records), so that this agent can pass it
/// on in turn after a restart. The authority's revocation list comes the same ways, and from the
/// operator (`revocation_file`, `POST /v1/mesh/revocations`); the newest wins.
///
/// A writer counts only while its certificate is valid: not expired, not revoked.
public final class MeshOrigins: SyncOrigins {
    public let revocations: MeshRevocations
    private let store: Store
    private let now: @Sendable () -> Date
    private let certificates = Mutex<[SiteID: PeerCertificate]>([:])
    /// Called with each newer list adopted and the peers it newly revokes (to pass it on to the
    /// peers connected now, and close what the revoked ones hold).
    private let adopted: @Sendable (RevocationList, Set<PeerID>) -> Void
    private let log: @Sendable (String) -> Void

    static let recordPrefix = "origin/"
    static let revocationsRecord = "mesh/revocations"

    /// Loads what the store kept; `own` is this agent's certificate (others may relay its writes
    /// back to it).
    public init(
        own: PeerCertificate, revocations: MeshRevocations, store: Store, now: @escaping @Sendable () -> Date = { Date() },
        adopted: @escaping @Sendable (RevocationList, Set<PeerID>) -> Void = { _, _ in }, log: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.revocations = revocations
        self.store = store
        self.now = now
        self.adopted = adopted
        self.log = log
        if let bytes = try? store.syncRecord(Self.revocationsRecord), let list = try? RevocationList(decoding: bytes) {
            _ = try? revocations.adopt(list)
        }
        var kept: [SiteID: PeerCertificate] = [:]
        for (_, bytes) in (try? store.syncRecords(prefix: Self.recordPrefix)) ?? [] {
            guard let certificate = try? PeerCertificate(decoding: bytes), (try? certificate.verify(authority: revocations.authority, now: .distantPast)) != nil
            else { continue }
            kept[SiteID(peer: certificate.peerID)] = certificate
        }
        certificates.withLock { $0 = kept }
        admit(own)
    }

    // MARK: SyncOrigins

    public func writable(by site: SiteID) -> CollectionSet? {
        valid(site)?.permissions.write
    }

    public func credential(of site: SiteID) -> Credentials.Item? {
        valid(site).map { Credentials.Item(.certificate, bytes: $0.encoded) }
    }

    public func receive(_ items: [Credentials.Item], from peer: String) {
        for item in items {
            switch Credentials.Kind(rawValue: item.kind) {
            case .certificate?:
                do {
                    let certificate = try PeerCertificate(decoding: item.bytes)
                    try certificate.verify(authority: revocations.authority, now: now())
                    admit(certificate)
                } catch {
                    log("\(peer) passed on a certificate that does not check: \(error)")
                }
            case .revocations?:
                do {
                    try adopt(try RevocationList(decoding: item.bytes), from: peer)
                } catch {
                    log("\(peer) passed on a revocation list that does not check: \(error)")
                }
            case nil:
                continue
            }
        }
    }

    public var announcements: [Credentials.Item] {
        revocations.list.map { [Credentials.Item(.revocations, bytes: $0.encoded)] } ?? []
    }

    // MARK: Taking credentials in

    /// Takes in a certificate the handshake or a relay checked against the authority: the site
    /// its key names may write what it says. A certificate for a site another key already holds
    /// is refused (two keys whose ids start alike); a newer one for the same key (a later expiry)
    /// replaces the one held.
    @discardableResult
    public func admit(_ certificate: PeerCertificate) -> Bool {
        let site = SiteID(peer: certificate.peerID)
        let (taken, clash) = certificates.withLock { held -> (Bool, PeerCertificate?) in
            if let current = held[site] {
                guard current.publicKey == certificate.publicKey else { return (false, current) }
                guard current != certificate, (certificate.expiresAt ?? .distantFuture) >= (current.expiresAt ?? .distantFuture) else { return (false, nil) }
            }
            held[site] = certificate
            return (true, nil)
        }
        if let clash {
            log("refused the certificate of \(certificate.name) (\(certificate.peerID)): its site \(site) belongs to \(clash.name) (\(clash.peerID))")
        }
        if taken {
            do {
                try store.setSyncRecord(Self.recordPrefix + site.description, certificate.encoded)
            } catch {
                log("could not keep the certificate of \(certificate.name): \(error)")
            }
        }
        return taken
    }

    /// Adopts `list` if the authority signed it and it is newer than the one in force; keeps it,
    /// and reports the peers it newly revokes. Throws when it does not check.
    @discardableResult
    public func adopt(_ list: RevocationList, from source: String) throws(CertificateError) -> Set<PeerID> {
        let before = revocations.list?.serial
        let newlyRevoked = try revocations.adopt(list)
        guard revocations.list?.serial == list.serial, before.map({ $0 < list.serial }) ?? true else { return [] }
        do {
            try store.setSyncRecord(Self.revocationsRecord, list.encoded)
        } catch {
            log("could not keep revocation list \(list.serial): \(error)")
        }
        log("adopted revocation list \(list.serial) from \(source): it revokes \(list.peers.count) peers"
            + (newlyRevoked.isEmpty ? "" : ", newly " + newlyRevoked.map(\.description).sorted().joined(separator: ", ")))
        adopted(list, newlyRevoked)
        return newlyRevoked
    }

    /// The certificate held for `site` while it is valid now.
    private func valid(_ site: SiteID) -> PeerCertificate? {
        guard let certificate = certificates.withLock({ $0[site] }) else { return nil }
        if let expiry = certificate.expiresAt, expiry <= now() { return nil }
        if revocations.revokes(certificate.peerID) { return nil }
        return certificate
    }
}

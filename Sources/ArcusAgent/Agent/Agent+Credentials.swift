import ArcusCodec
import ArcusMesh
import Foundation
import Logging

/// A peer is trusted as far as its credential says, for as long as it says: links and sessions of
/// a peer whose certificate expires, or that the authority revokes, are cut as that happens.
extension Agent {
    /// Passes each revocation list adopted on to the peers connected now (those that connect
    /// later get it when their sessions start) and cuts the peers it revokes: their links, mesh
    /// session and sync session close, and the handshake refuses them from then on.
    func enforceRevocations() async {
        for await (list, revoked) in adoptedRevocations {
            engine.pass(Credentials(items: [Credentials.Item(.revocations, bytes: list.encoded)]))
            for peer in revoked.sorted() {
                logger.warning("revoked by the mesh authority: closing its links", metadata: ["peer": "\(peer)", "list": "\(list.serial)"])
                await multiplexer.cut(peer)
            }
        }
    }

    /// Cuts `peer` when its certificate expires, if it has an expiry and is not watched already.
    func watchExpiry(of peer: AuthenticatedPeer) {
        guard let expiry = peer.certificate?.expiresAt, expiryWatched.withLock({ $0.insert(peer.peerID).inserted }) else { return }
        // Weak: a stopped agent is not kept alive for a certificate that expires in a year.
        Task { [weak self] in
            // The wall clock, not the sleep's clock, says when it has expired: sleep until it agrees.
            while case let left = expiry.timeIntervalSinceNow, left > 0 {
                try? await Task.sleep(for: .milliseconds(Int64(min(left, 3600) * 1000) + 1))
                guard self != nil else { return }
            }
            guard let self else { return }
            expiryWatched.withLock { _ = $0.remove(peer.peerID) }
            logger.warning("certificate expired: closing its links", metadata: ["peer": "\(peer)", "expired": "\(expiry.formatted(.iso8601))"])
            await multiplexer.cut(peer.peerID)
        }
    }

    /// Reads the revocation list at `path` (`revocation_file`) and adopts it if it is newer.
    static func adoptRevocations(at path: String, into origins: MeshOrigins) throws(CommandError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CommandError("cannot read the revocation list \(path): it does not exist or is not readable", exitStatus: 2)
        }
        do {
            try origins.adopt(try RevocationList(decoding: Array(data.prefix(1 << 20))), from: path)
        } catch {
            throw CommandError("\(path) is not a revocation list of this mesh's authority: \(error)", exitStatus: 2)
        }
    }
}

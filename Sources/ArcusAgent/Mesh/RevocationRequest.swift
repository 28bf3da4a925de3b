import ArcusMesh
import Foundation

/// `arcus mesh revoke`: adds peers to the authority's revocation list (`revocations` in the
/// authority directory), numbered one above the last, signed, and written where the operator
/// says; the operator hands it to any one agent (`revocation_file`, or `arcus mesh revocations
/// --agent URL FILE`), and the mesh passes it on.
public struct RevocationRequest {
    public enum PeerSource {
        /// 32 hex digits, as `arcus mesh identity` and `arcus peers` show a peer id.
        case peerID(String)
        /// The peer's certificate file.
        case certificate(String)
    }

    public var authority: AuthorityDirectory
    public var peers: [PeerSource]
    /// Where to write a copy of the list, besides the authority directory.
    public var output: String?

    public init(authority: AuthorityDirectory, peers: [PeerSource], output: String?) {
        self.authority = authority
        self.peers = peers
        self.output = output
    }

    var listPath: String { authority.url.appendingPathComponent("revocations").path }

    /// Signs the new list and writes it; returns a JSON line describing it.
    public func revoke(now: Date = Date()) throws -> String {
        let signer = try authority.loadAuthority()
        var previous: RevocationList?
        if let data = FileManager.default.contents(atPath: listPath) {
            do {
                previous = try RevocationList(decoding: Array(data))
                try previous?.verify(authority: signer.publicKey)
            } catch {
                throw CommandError("\(listPath) is not this authority's revocation list (\(error)); move it away to start a new one", exitStatus: 2)
            }
        }
        var revoked = previous?.peers ?? []
        for source in peers { revoked.insert(try peerID(source)) }
        let list: RevocationList
        do {
            list = try signer.revocationList(serial: (previous?.serial ?? 0) + 1, revoking: revoked, issuedAt: now)
        } catch {
            throw CommandError("\(error)", exitStatus: 2)
        }
        for path in [listPath] + (output.map { [$0] } ?? []) {
            do {
                try Data(list.encoded).write(to: URL(fileURLWithPath: path), options: .atomic)
            } catch {
                throw CommandError("cannot write the revocation list to \(path): \(error.localizedDescription)")
            }
        }
        let names = list.peers.map(\.description).sorted().map(jsonString).joined(separator: ", ")
        return """
            {"serial": \(list.serial), "revoked": [\(names)], "list": \(jsonString(output ?? listPath)), "bytes": \(list.encoded.count)}
            """
    }

    private func peerID(_ source: PeerSource) throws -> PeerID {
        switch source {
        case .peerID(let text):
            guard let bytes = Hex.decode(text), let id = PeerID(bytes: bytes) else {
                throw CommandError("--peer-id must be a peer id, 32 hex digits (as `arcus mesh identity` prints it); \"\(text)\" is not", exitStatus: 2)
            }
            return id
        case .certificate(let path):
            guard let data = FileManager.default.contents(atPath: path) else {
                throw CommandError("cannot read the certificate \(path)", exitStatus: 2)
            }
            do {
                return try PeerCertificate(decoding: Array(data.prefix(PeerCertificate.Limits.encodedBytes + 1))).peerID
            } catch {
                throw CommandError("\(path) is not an Arcus certificate: \(error)", exitStatus: 2)
            }
        }
    }
}

import ArcusMesh
import Foundation

/// The peer identity an agent keeps in its data directory (`identity`, mode 0600): made the
/// first time it is asked for, the same ever after. `arcus mesh identity` shows it, so that an
/// authority can issue the peer's certificate (`arcus mesh issue --identity` or `--public-key`).
public struct DataDirectoryIdentity {
    public let directory: URL
    public var file: URL { directory.appendingPathComponent("identity") }

    public init(_ path: String) {
        directory = URL(fileURLWithPath: path)
    }

    /// Loads the identity, or makes it; returns one JSON line for the user.
    public func loadOrCreate() throws -> String {
        let existed = FileManager.default.fileExists(atPath: file.path)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw CommandError("cannot create the data directory \(directory.path): \(error.localizedDescription)")
        }
        let identity: PeerIdentity
        do {
            identity = try PeerIdentity.load(orCreateAt: file)
        } catch {
            throw CommandError("cannot use \(file.path): \(error)", exitStatus: 2)
        }
        return """
            {"peer_id": "\(identity.peerID)", "public_key": "\(identity.publicKey)", "identity": \(jsonString(file.path)), \
            "created": \(!existed)}
            """
    }
}

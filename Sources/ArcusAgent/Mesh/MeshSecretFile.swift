import ArcusMesh
import Foundation

/// The file `arcus mesh secret FILE` writes: a new shared secret for a mesh, 32 bytes from the
/// system's cryptographically secure generator, created with mode 0600 through a temporary file
/// and `link(2)` (`SecretFile`), so it is whole or absent and never replaces an existing file.
/// Every device of the mesh gets a copy and names it in `mesh_secret_file`.
public struct MeshSecretFile {
    public let path: String

    public init(_ path: String) {
        self.path = path
    }

    /// Writes the secret; returns one JSON line for the user: the file, its size and mode, and
    /// the mesh identifier peers with it advertise (the same on every device of the mesh).
    /// Throws (exit status 2) when the file exists: replacing a secret locks out every device
    /// that holds the old one.
    public func create() throws(CommandError) -> String {
        let (secret, bytes) = MeshSecret.random()
        let created: Bool
        do {
            created = try SecretFile.create(bytes, at: path)
        } catch {
            throw CommandError("cannot write the mesh secret to \(path): \(error)", exitStatus: 2)
        }
        guard created else {
            throw CommandError(
                "\(path) already exists: it may be the secret a mesh already uses, and replacing it would lock out every device "
                    + "that holds it. Choose another file, or remove this one on purpose",
                exitStatus: 2
            )
        }
        return """
            {"mesh_secret_file": \(jsonString(path)), "bytes": \(bytes.count), "mode": "0600", \
            "mesh_id": "\(MeshCredential.sharedSecret(secret).meshHash)"}
            """
    }

    /// What to do with the file once it is written.
    public var nextSteps: String {
        """
        Copy \(path) to every device of the mesh (keep it mode 0600, owned by the agent's user), and name it in \
        each agent's configuration: mesh_secret_file = "\(path)" (TOML) or {"mesh_secret_file": "\(path)"} (JSON). \
        Agents holding it find each other and link; `arcus doctor --config FILE` checks it.
        """
    }
}

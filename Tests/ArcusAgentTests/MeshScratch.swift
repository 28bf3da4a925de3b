import ArcusAgent
import Foundation

/// A scratch directory for agent processes of one mesh: a fresh shared secret (0600, made as
/// `arcus mesh secret` makes one) and a config file naming it, so that agents left by other
/// runs are never let in.
struct MeshScratch {
    let directory: URL
    let config: URL

    init(_ label: String) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-\(label)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let secret = directory.appendingPathComponent("secret")
        _ = try MeshSecretFile(secret.path).create()
        config = directory.appendingPathComponent("agent.json")
        try Data(#"{"mesh_secret_file": "\#(secret.path)"}"#.utf8).write(to: config)
    }

    /// A data directory for one agent.
    func data(_ name: String) -> String { directory.appendingPathComponent(name).path }

    func remove() { try? FileManager.default.removeItem(at: directory) }
}

import Foundation

/// A scratch directory for agent processes of one mesh: a fresh shared secret (0600) and a
/// config file naming it, so that agents left by other runs are never let in.
struct MeshScratch {
    let directory: URL
    let config: URL

    init(_ label: String) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-\(label)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let secret = directory.appendingPathComponent("secret")
        try Data((0..<32).map { _ in UInt8.random(in: 0...255) }).write(to: secret)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: secret.path)
        config = directory.appendingPathComponent("agent.json")
        try Data(#"{"mesh_secret_file": "\#(secret.path)"}"#.utf8).write(to: config)
    }

    /// A data directory for one agent.
    func data(_ name: String) -> String { directory.appendingPathComponent(name).path }

    func remove() { try? FileManager.default.removeItem(at: directory) }
}

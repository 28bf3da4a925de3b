import ArcusMesh
import Foundation

/// The directory `arcus mesh init` makes for a mesh authority: `authority.key`, the private key
/// (mode 0600; keep it offline), and `authority.pub`, its public key in hex, which every peer of
/// the mesh is given to check certificates with.
public struct AuthorityDirectory {
    public let url: URL

    public init(_ path: String) {
        url = URL(fileURLWithPath: path)
    }

    var privateKeyPath: String { url.appendingPathComponent("authority.key").path }
    var publicKeyPath: String { url.appendingPathComponent("authority.pub").path }

    /// Makes a new authority in the directory (created if needed, mode 0700). Refuses to replace an
    /// existing authority: every certificate it signed would stop being accepted. Returns what
    /// was made, for the user.
    public func create() throws -> String {
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw CommandError("cannot create the directory \(url.path): \(error.localizedDescription)")
        }
        let authority = MeshAuthority()
        let created: Bool
        do {
            created = try SecretFile.create(authority.serialized, at: privateKeyPath)
        } catch {
            throw CommandError("cannot write \(privateKeyPath): \(error)")
        }
        guard created else {
            throw CommandError(
                "\(privateKeyPath) already exists: a mesh authority is already there. Replacing it would invalidate every "
                    + "certificate it issued; choose another --out directory, or remove the old one on purpose",
                exitStatus: 2
            )
        }
        do {
            try Data((authority.publicKey.description + "\n").utf8).write(to: URL(fileURLWithPath: publicKeyPath), options: .atomic)
        } catch {
            throw CommandError("cannot write \(publicKeyPath): \(error.localizedDescription)")
        }
        return """
            {"authority_public_key": "\(authority.publicKey)", "private_key": \(jsonString(privateKeyPath)), \
            "public_key": \(jsonString(publicKeyPath))}
            """
    }

    /// The authority whose private key the directory holds.
    func loadAuthority() throws -> MeshAuthority {
        let bytes: [UInt8]?
        do {
            bytes = try SecretFile.read(at: privateKeyPath, maximumBytes: 256)
        } catch {
            throw CommandError("cannot use the authority key: \(error)", exitStatus: 2)
        }
        guard let bytes else {
            throw CommandError("\(privateKeyPath) does not exist; make an authority with `arcus mesh init --out \(url.path)`", exitStatus: 2)
        }
        do {
            return try MeshAuthority(serialized: bytes)
        } catch {
            throw CommandError("\(privateKeyPath): \(error)", exitStatus: 2)
        }
    }
}

/// `text` as a JSON string literal.
func jsonString(_ text: String) -> String {
    let data = (try? JSONSerialization.data(withJSONObject: [text], options: [.withoutEscapingSlashes])) ?? Data("[\"\"]".utf8)
    return String(decoding: data.dropFirst().dropLast(), as: UTF8.self)
}

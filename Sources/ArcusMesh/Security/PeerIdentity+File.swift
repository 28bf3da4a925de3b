import Foundation

extension PeerIdentity {
    /// The identity stored at `url`, or a new one stored there (mode 0600) if the file does not
    /// exist. Two processes starting at once end up with the same identity.
    ///
    /// Throws `IdentityError.file` when the file may be read by its group or others, or belongs to
    /// another user (see `SecretFile`): its key may have leaked, and the error says how to fix it.
    public static func load(orCreateAt url: URL) throws(IdentityError) -> PeerIdentity {
        if let existing = try load(at: url.path) { return existing }
        let identity = PeerIdentity()
        do {
            if try SecretFile.create(identity.serialized, at: url.path) { return identity }
        } catch {
            throw .file(error)
        }
        // Another process created the file first: use its identity.
        guard let existing = try load(at: url.path) else {
            throw .file(.system(path: url.path, operation: "reading", errno: ENOENT, message: "the file vanished after it was created"))
        }
        return existing
    }

    /// The identity stored at `url`; throws if there is none.
    public static func load(from url: URL) throws(IdentityError) -> PeerIdentity {
        guard let identity = try load(at: url.path) else {
            throw .file(.system(path: url.path, operation: "opening", errno: ENOENT, message: "no such file"))
        }
        return identity
    }

    private static func load(at path: String) throws(IdentityError) -> PeerIdentity? {
        let bytes: [UInt8]?
        do {
            bytes = try SecretFile.read(at: path, maximumBytes: encoding.size)
        } catch .tooLarge {
            throw .malformedIdentity("\(path) is not an Arcus identity file; move it away to create a new identity")
        } catch {
            throw .file(error)
        }
        guard let bytes else { return nil }
        do {
            return try PeerIdentity(serialized: bytes)
        } catch {
            throw .malformedIdentity("\(path) is not an Arcus identity file (\(bytes.count) bytes); move it away to create a new identity")
        }
    }
}

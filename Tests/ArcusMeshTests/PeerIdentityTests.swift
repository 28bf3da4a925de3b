import ArcusMesh
import Foundation
import Testing

@Suite("Peer identity")
struct PeerIdentityTests {
    @Test("an identity round-trips through its bytes, keeping its keys and peer id")
    func roundTrip() throws {
        let identity = PeerIdentity()
        let copy = try PeerIdentity(serialized: identity.serialized)
        #expect(copy.publicKey == identity.publicKey)
        #expect(copy.peerID == identity.peerID)
        #expect(copy.agreementKey.publicKey.rawRepresentation == identity.agreementKey.publicKey.rawRepresentation)
        #expect(try PeerPublicKey(bytes: identity.publicKey.bytes) == identity.publicKey)
        #expect(identity.peerID.description.count == 32)
        #expect(PeerIdentity().peerID != identity.peerID)
    }

    @Test("a public key round-trips through its hex form; anything but hex digits is refused")
    func hex() throws {
        let key = PeerIdentity().publicKey
        #expect(try PeerPublicKey(bytes: try #require(Hex.decode(" \(key.description.uppercased())\n"))) == key)
        #expect(Hex.decode("abc") == nil && Hex.decode("zz") == nil && Hex.decode("") == [])
    }

    @Test("malformed identity and public key bytes are refused with an error, not a crash")
    func malformedBytes() {
        let identity = PeerIdentity()
        #expect(throws: IdentityError.self) { try PeerIdentity(serialized: identity.serialized.dropLast()) }
        #expect(throws: IdentityError.self) { try PeerIdentity(serialized: [0] + identity.serialized.dropFirst()) }
        #expect(throws: IdentityError.malformedPublicKey(byteCount: 63)) { try PeerPublicKey(bytes: identity.publicKey.bytes.dropLast()) }
    }

    @Test("the identity file is created with mode 0600 and loads as the same identity")
    func fileIsOwnerOnly() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("identity")

        let created = try PeerIdentity.load(orCreateAt: url)
        let mode = try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try PeerIdentity.load(orCreateAt: url).peerID == created.peerID)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(leftovers == ["identity"], "no temporary file is left behind")
    }

    @Test("an identity file its group or others may read is refused, saying how to fix it")
    func openFileRefused() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("identity")
        _ = try PeerIdentity.load(orCreateAt: url)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: url.path)

        let error = #expect(throws: IdentityError.self) { try PeerIdentity.load(orCreateAt: url) }
        #expect(error == .file(.tooOpen(path: url.path, mode: 0o100644)))
        #expect(error?.description.contains("chmod 600 \(url.path)") == true)
    }

    @Test("a file that is not an identity is refused rather than replaced")
    func foreignFileRefused() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("identity")
        #expect(FileManager.default.createFile(atPath: url.path, contents: Data("hello".utf8), attributes: [.posixPermissions: 0o600]))
        #expect(throws: IdentityError.self) { try PeerIdentity.load(orCreateAt: url) }
        #expect(try Data(contentsOf: url) == Data("hello".utf8))
    }

    private func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-identity-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

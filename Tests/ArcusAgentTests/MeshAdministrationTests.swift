import ArcusCodec
import ArcusAgent
import ArcusMesh
import Foundation
import Testing

@Suite("arcus mesh init and issue")
struct MeshAdministrationTests {
    @Test("init makes an owner-only authority key and refuses to replace it")
    func initialize() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let authority = AuthorityDirectory(directory.appendingPathComponent("authority").path)
        _ = try authority.create()
        let keyPath = authority.url.appendingPathComponent("authority.key").path
        #expect(try FileManager.default.attributesOfItem(atPath: keyPath)[.posixPermissions] as? Int == 0o600)

        let error = #expect(throws: CommandError.self) { try authority.create() }
        #expect(error?.message.contains("already exists") == true && error?.exitStatus == 2)
    }

    @Test("identity makes the peer's key once, owner-only, shows the same id after, and refuses a file others can read")
    func identity() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = DataDirectoryIdentity(directory.appendingPathComponent("data").path)
        func fields(_ line: String) throws -> [String: Any] {
            try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
        let first = try fields(data.loadOrCreate()), second = try fields(data.loadOrCreate())
        #expect(first["created"] as? Bool == true && second["created"] as? Bool == false)
        #expect(first["peer_id"] as? String == second["peer_id"] as? String)
        #expect(first["public_key"] as? String == second["public_key"] as? String)
        #expect(first["peer_id"] as? String == (try PeerIdentity.load(from: data.file).peerID.description))
        #expect(try FileManager.default.attributesOfItem(atPath: data.file.path)[.posixPermissions] as? Int == 0o600)

        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: data.file.path)
        let error = #expect(throws: CommandError.self) { try data.loadOrCreate() }
        #expect(error?.message.contains("chmod 600") == true && error?.exitStatus == 2)
    }

    @Test("issue signs a certificate for an identity file that verifies with authority.pub and carries the permissions")
    func issue() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let authority = AuthorityDirectory(directory.appendingPathComponent("authority").path)
        _ = try authority.create()
        let identityURL = directory.appendingPathComponent("identity")
        let identity = try PeerIdentity.load(orCreateAt: identityURL)
        let output = directory.appendingPathComponent("gate.cert").path
        let now = Date()
        let request = CertificateRequest(
            authority: authority, peerName: "gate-7", publicKey: .identityFile(identityURL.path),
            read: ["cars", "trucks"], write: ["cars"], days: 30, output: output
        )
        let summary = try request.issue(now: now)
        #expect(summary.contains("\"peer_id\": \"\(identity.peerID)\""))

        let publicText = try String(contentsOf: authority.url.appendingPathComponent("authority.pub"), encoding: .utf8)
        let authorityKey = try #require(Hex.decode(publicText).flatMap { AuthorityPublicKey(bytes: $0) })
        let certificate = try PeerCertificate(decoding: Array(try Data(contentsOf: URL(fileURLWithPath: output))))
        try certificate.verify(authority: authorityKey, now: now)
        #expect(certificate.publicKey == identity.publicKey && certificate.name == "gate-7")
        #expect(certificate.permissions == CollectionPermissions(read: CollectionSet(["cars", "trucks"]), write: CollectionSet(["cars"])))
        #expect(throws: CertificateError.self) { try certificate.verify(authority: authorityKey, now: now.addingTimeInterval(31 * 86_400)) }
    }

    @Test("a certificate expires in a year unless told otherwise, and relays only when issued with the relay role")
    func defaultsAndRelay() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let authority = AuthorityDirectory(directory.appendingPathComponent("authority").path)
        _ = try authority.create()
        let now = Date()
        func issued(relay: Bool) throws -> PeerCertificate {
            let output = directory.appendingPathComponent("\(relay).cert").path
            let line = try CertificateRequest(
                authority: authority, peerName: "p", publicKey: .hex(PeerIdentity().publicKey.description), read: ["*"], write: ["*"],
                relay: relay, output: output
            ).issue(now: now)
            #expect(line.contains("\"relay\": \(relay)"))
            return try PeerCertificate(decoding: Array(try Data(contentsOf: URL(fileURLWithPath: output))))
        }
        let plain = try issued(relay: false), relay = try issued(relay: true)
        let year = now.addingTimeInterval(365 * 86_400).timeIntervalSince1970.rounded(.down)
        #expect(plain.expiresAt?.timeIntervalSince1970 == year)
        #expect(!plain.permissions.relay && relay.permissions.relay)
        #expect(relay.formatVersion == PeerCertificate.version)
    }

    @Test("revoke signs a numbered list that grows with each revocation and verifies with authority.pub")
    func revoke() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let authority = AuthorityDirectory(directory.appendingPathComponent("authority").path)
        _ = try authority.create()
        let stolen = PeerIdentity(), lost = PeerIdentity()
        let certificate = directory.appendingPathComponent("lost.cert").path
        _ = try CertificateRequest(authority: authority, peerName: "lost", publicKey: .hex(lost.publicKey.description), read: [], write: [], output: certificate).issue()
        let copy = directory.appendingPathComponent("revocations").path
        let first = try RevocationRequest(authority: authority, peers: [.peerID(stolen.peerID.description)], output: copy).revoke()
        #expect(first.contains("\"serial\": 1") && first.contains(stolen.peerID.description))
        let second = try RevocationRequest(authority: authority, peers: [.certificate(certificate)], output: copy).revoke()
        #expect(second.contains("\"serial\": 2"))
        let publicText = try String(contentsOf: authority.url.appendingPathComponent("authority.pub"), encoding: .utf8)
        let key = try #require(Hex.decode(publicText.trimmingCharacters(in: .whitespacesAndNewlines)).flatMap { AuthorityPublicKey(bytes: $0) })
        let list = try RevocationList(decoding: Array(try Data(contentsOf: URL(fileURLWithPath: copy))))
        try list.verify(authority: key)
        #expect(list.serial == 2 && list.peers == [stolen.peerID, lost.peerID])
        #expect(throws: CertificateError.self) { try list.verify(authority: MeshAuthority().publicKey) }
        let bad = #expect(throws: CommandError.self) { try RevocationRequest(authority: authority, peers: [.peerID("xyz")], output: nil).revoke() }
        #expect(bad?.message.contains("--peer-id") == true && bad?.exitStatus == 2)
    }

    @Test("bad input is refused with exit status 2 and a message naming the option")
    func badInput() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let authority = AuthorityDirectory(directory.appendingPathComponent("authority").path)
        let output = directory.appendingPathComponent("out.cert").path
        func request(_ key: CertificateRequest.PublicKeySource, days: Int = CertificateRequest.defaultDays) -> CertificateRequest {
            CertificateRequest(authority: authority, peerName: "p", publicKey: key, read: [], write: [], days: days, output: output)
        }
        let key = PeerIdentity().publicKey.description

        let missing = #expect(throws: CommandError.self) { try request(.hex(key)).issue() }
        #expect(missing?.message.contains("arcus mesh init") == true)
        _ = try authority.create()
        let notHex = #expect(throws: CommandError.self) { try request(.hex("xyz")).issue() }
        #expect(notHex?.message.contains("--public-key") == true && notHex?.exitStatus == 2)
        let short = #expect(throws: CommandError.self) { try request(.hex("abcd")).issue() }
        #expect(short?.message.contains("64 bytes") == true)
        let days = #expect(throws: CommandError.self) { try request(.hex(key), days: 0).issue() }
        #expect(days?.message.contains("--days") == true)
        let forever = #expect(throws: CommandError.self) { try request(.hex(key), days: 36_500).issue() }
        #expect(forever?.message.contains("--days") == true)
        #expect(!FileManager.default.fileExists(atPath: output))
    }

    private func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-mesh-admin-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

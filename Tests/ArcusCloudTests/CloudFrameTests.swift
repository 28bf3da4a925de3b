@testable import ArcusCloud
import ArcusMesh
import Testing

/// The relay's frames and announcements: what goes out reads back, and what anyone else could
/// publish on a mesh's subjects is refused before anything is copied.
struct CloudFrameTests {
    static let alice = PeerIdentity(), bob = PeerIdentity()
    static let mesh = "0123456789abcdef"

    /// Alice's seal for frames to Bob, both on their first runs.
    static func seal(aliceRun: UInt64 = 1, bobRun: UInt64 = 2, mesh: String = mesh) -> CloudFrameSeal {
        let key = CloudFrameSeal.pairKey(alice, with: bob.publicKey, mesh: mesh)!
        return CloudFrameSeal(key: key, local: alice.peerID, localInstance: aliceRun, remote: bob.peerID, remoteInstance: bobRun)
    }

    /// Bob's view: what he checks Alice's frames with.
    static func bobOpening(aliceRun: UInt64 = 1, bobRun: UInt64 = 2, mesh: String = mesh) -> CloudFrameSeal {
        let key = CloudFrameSeal.pairKey(bob, with: alice.publicKey, mesh: mesh)!
        return CloudFrameSeal(key: key, local: bob.peerID, localInstance: bobRun, remote: alice.peerID, remoteInstance: aliceRun).opening
    }

    @Test("every kind of frame reads back as written, and its tag verifies at the other peer")
    func roundTrip() throws {
        let frames = [
            CloudFrame(.open, fromDialler: true, link: 0x0102_0304_0506_0708, value: 262_144, body: Array(0..<80)),
            CloudFrame(.accept, fromDialler: false, link: .max, value: 1, body: Array(0..<8)),
            CloudFrame(.data, fromDialler: true, link: 7, value: 42, body: [UInt8](repeating: 0xAB, count: 1_000)),
            CloudFrame(.data, fromDialler: false, link: 7, value: .max, body: []),
            CloudFrame(.credit, fromDialler: false, link: 9, value: 65_536),
            CloudFrame(.close, fromDialler: true, link: 9),
        ]
        for frame in frames {
            let sealed = Self.seal().seal(frame)
            #expect(sealed.count == frame.body.count + CloudFrame.overhead)
            let read = try CloudFrame(decoding: sealed, maximumBody: 32 << 10)
            #expect(read == frame)
            #expect(Self.bobOpening().verifies(read))
        }
    }

    @Test("a tag verifies only for its pair, its runs, its direction and its mesh, and any changed byte breaks it")
    func tagsBindEverything() throws {
        let frame = CloudFrame(.close, fromDialler: true, link: 5)
        let read = try CloudFrame(decoding: Self.seal().seal(frame), maximumBody: 100)
        #expect(Self.bobOpening().verifies(read))
        #expect(!Self.bobOpening(aliceRun: 9).verifies(read), "another run of the sender")
        #expect(!Self.bobOpening(bobRun: 9).verifies(read), "another run of the receiver")
        #expect(!Self.bobOpening(mesh: "fedcba9876543210").verifies(read), "another mesh")
        #expect(!Self.seal().opening.verifies(read), "reflected back to its sender")
        let mallory = PeerIdentity()
        let malloryKey = CloudFrameSeal.pairKey(mallory, with: Self.bob.publicKey, mesh: Self.mesh)!
        let forged = CloudFrameSeal(key: malloryKey, local: Self.alice.peerID, localInstance: 1, remote: Self.bob.peerID, remoteInstance: 2)
        #expect(!Self.bobOpening().verifies(try CloudFrame(decoding: forged.seal(frame), maximumBody: 100)), "someone else's key")
        let sealed = Self.seal().seal(frame)
        for index in sealed.indices {
            var changed = sealed
            changed[index] ^= 0x01
            if let altered = try? CloudFrame(decoding: changed, maximumBody: 100) {
                #expect(!Self.bobOpening().verifies(altered), "byte \(index) changed")
            }
        }
    }

    @Test("truncated, unknown, oversized, malformed and version 1 frames are refused with the reason")
    func refusals() {
        let seal = Self.seal()
        let data = seal.seal(CloudFrame(.data, fromDialler: true, link: 1, value: 0, body: [1, 2, 3]))
        var newer = data
        newer[0] = 3
        var strangeKind = data
        strangeKind[1] = 99
        var strangeFlags = data
        strangeFlags[2] = 0x80
        let versionOne: [UInt8] = [1, 3, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 2, 3]
        let cases: [([UInt8], CloudFrameError)] = [
            ([], .truncated(0)),
            (Array(data.prefix(30)), .truncated(30)),
            (versionOne, .unknownVersion(1)),
            (newer, .unknownVersion(3)),
            (strangeKind, .unknownKind(99)),
            (strangeFlags, .unknownFlags(0x80)),
            (seal.seal(CloudFrame(.data, fromDialler: true, link: 1, body: [UInt8](repeating: 0, count: 101))), .tooLarge(101, limit: 100)),
            (seal.seal(CloudFrame(.open, fromDialler: true, link: 1, body: [1, 2, 3])), .badBody(.open, 3)),
            (seal.seal(CloudFrame(.accept, fromDialler: false, link: 1, body: [])), .badBody(.accept, 0)),
            (seal.seal(CloudFrame(.close, fromDialler: false, link: 1, body: [0])), .badBody(.close, 1)),
        ]
        for (bytes, expected) in cases {
            #expect(throws: expected) { try CloudFrame(decoding: bytes, maximumBody: 100) }
        }
        #expect(CloudFrameError.unknownVersion(1).description.contains("older Arcus"))
    }

    @Test("announcements read back and verify; altered, re-signed by another key, or for another mesh they do not")
    func announcements() {
        let peer = Self.alice
        for announcement in [
            CloudAnnouncement(.here, by: peer, instance: 0xDEAD_BEEF, time: 1_700_000_000_000, storesFrames: true, mesh: Self.mesh),
            CloudAnnouncement(.leaving, by: peer, instance: 1, time: 2, storesFrames: false, mesh: Self.mesh),
        ] {
            #expect(announcement.encoded.count == CloudAnnouncement.size)
            let read = CloudAnnouncement(decoding: announcement.encoded)
            #expect(read == announcement)
            #expect(read?.peer == peer.peerID)
            #expect(read?.isSigned(on: Self.mesh) == true)
            #expect(read?.isSigned(on: "fedcba9876543210") == false)
        }
        let good = CloudAnnouncement(.here, by: peer, instance: 5, time: 10, storesFrames: false, mesh: Self.mesh).encoded
        // Every field the signature covers: kind, key, instance, time, flags; and the signature.
        for index in 11..<CloudAnnouncement.size {
            var changed = good
            changed[index] ^= 0x01
            if let altered = CloudAnnouncement(decoding: changed) {
                #expect(!altered.isSigned(on: Self.mesh), "byte \(index) changed")
            }
        }
        // Someone else's signature over the same claim: the key names the peer, so it is not Alice's.
        let mallory = CloudAnnouncement(.leaving, by: PeerIdentity(), instance: 5, time: 11, storesFrames: false, mesh: Self.mesh)
        #expect(mallory.peer != peer.peerID)
        var badKind = good
        badKind[11] = 7
        var badFlags = good
        badFlags[92] = 2
        let versionOne = Array("ARCUS-NATS1".utf8) + [1] + [UInt8](repeating: 0, count: 25)
        for bad in [[], Array(good.dropLast()), good + [0], badKind, badFlags, versionOne] {
            #expect(CloudAnnouncement(decoding: bad) == nil)
        }
        #expect(CloudAnnouncement.isOlderVersion(versionOne))
        #expect(!CloudAnnouncement.isOlderVersion(good))
    }

    @Test("link subjects name their sender; other subjects and malformed senders do not")
    func subjects() {
        let subjects = CloudSubjects(meshHash: "0123456789abcdef")
        let (me, other) = (PeerID(bytes: Array(1...16))!, PeerID(bytes: Array(17...32))!)
        #expect(subjects.sender(of: subjects.link(to: me, from: other), addressedTo: me) == other)
        #expect(subjects.sender(of: subjects.link(to: other, from: me), addressedTo: me) == nil)
        #expect(subjects.sender(of: "arcus.0123456789abcdef.link.\(me).zz", addressedTo: me) == nil)
        #expect(subjects.sender(of: "arcus.ffffffffffffffff.link.\(me).\(other)", addressedTo: me) == nil)
        #expect(subjects.sender(of: subjects.link(to: me, from: other) + ".x", addressedTo: me) == nil)
        #expect(subjects.streamName == "ARCUS_0123456789abcdef")
    }
}

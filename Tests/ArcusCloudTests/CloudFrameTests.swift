@testable import ArcusCloud
import ArcusMesh
import Testing

/// The relay's frames and announcements: what goes out reads back, and what anyone else could
/// publish on a mesh's subjects is refused before anything is copied.
struct CloudFrameTests {
    @Test("every kind of frame reads back as written")
    func roundTrip() throws {
        let frames = [
            CloudFrame(.open, fromDialler: true, link: 0x0102_0304_0506_0708, value: 262_144, body: Array(0..<16)),
            CloudFrame(.accept, fromDialler: false, link: .max, value: 1, body: Array(0..<8)),
            CloudFrame(.data, fromDialler: true, link: 7, value: 42, body: [UInt8](repeating: 0xAB, count: 1_000)),
            CloudFrame(.data, fromDialler: false, link: 7, value: .max, body: []),
            CloudFrame(.credit, fromDialler: false, link: 9, value: 65_536),
            CloudFrame(.close, fromDialler: true, link: 9),
        ]
        for frame in frames {
            #expect(try CloudFrame(decoding: frame.encoded, maximumBody: 32 << 10) == frame)
        }
    }

    @Test("truncated, unknown, oversized and malformed frames are refused with the reason")
    func refusals() {
        let data = CloudFrame(.data, fromDialler: true, link: 1, value: 0, body: [1, 2, 3]).encoded
        var newer = data
        newer[0] = 2
        var strangeKind = data
        strangeKind[1] = 99
        var strangeFlags = data
        strangeFlags[2] = 0x80
        let cases: [([UInt8], CloudFrameError)] = [
            ([], .truncated(0)),
            (Array(data.prefix(14)), .truncated(14)),
            (newer, .unknownVersion(2)),
            (strangeKind, .unknownKind(99)),
            (strangeFlags, .unknownFlags(0x80)),
            (CloudFrame(.data, fromDialler: true, link: 1, body: [UInt8](repeating: 0, count: 101)).encoded, .tooLarge(101, limit: 100)),
            (CloudFrame(.open, fromDialler: true, link: 1, body: [1, 2, 3]).encoded, .badBody(.open, 3)),
            (CloudFrame(.accept, fromDialler: false, link: 1, body: []).encoded, .badBody(.accept, 0)),
            (CloudFrame(.close, fromDialler: false, link: 1, body: [0]).encoded, .badBody(.close, 1)),
        ]
        for (bytes, expected) in cases {
            #expect(throws: expected) { try CloudFrame(decoding: bytes, maximumBody: 100) }
        }
    }

    @Test("announcements read back; anything else on the presence subject is ignored")
    func announcements() {
        let peer = PeerID(bytes: Array(1...16))!
        for announcement in [
            CloudAnnouncement(.here, peer: peer, instance: 0xDEAD_BEEF, storesFrames: true),
            CloudAnnouncement(.leaving, peer: peer, instance: 1, storesFrames: false),
        ] {
            #expect(announcement.encoded.count == CloudAnnouncement.size)
            #expect(CloudAnnouncement(decoding: announcement.encoded) == announcement)
        }
        let good = CloudAnnouncement(.here, peer: peer, instance: 5, storesFrames: false).encoded
        var badKind = good
        badKind[11] = 7
        var badFlags = good
        badFlags[36] = 2
        for bad in [[], Array(good.dropLast()), good + [0], badKind, badFlags, Array("ARCUS-NATS2".utf8) + good.dropFirst(11)] {
            #expect(CloudAnnouncement(decoding: bad) == nil)
        }
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

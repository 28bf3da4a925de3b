import ArcusCloud
import ArcusMesh

/// What a NATS relay delivers (`CloudFrame(decoding:maximumBody:)`, `CloudAnnouncement(decoding:)`):
/// anyone the relay lets publish on a mesh's subjects can send these. Both formats are fixed, so
/// whatever decodes encodes to exactly its bytes.
enum CloudTarget {
    static let target = FuzzTarget(
        name: "cloud", entryPoint: "ArcusCloud: CloudFrame(decoding:maximumBody:), CloudAnnouncement(decoding:)", run: run, seeds: seeds
    )

    /// The body limit the transport decodes with: `CloudSettings.mtu`, 32 KiB by default.
    static let maximumBody = 32 << 10

    static func run(_ bytes: [UInt8]) {
        if let frame = try? CloudFrame(decoding: bytes, maximumBody: maximumBody) {
            FuzzCheck.expect(frame.encoded == bytes, "a cloud frame does not encode to its bytes: \(frame)")
            // The 15-byte header and a body within the limit.
            FuzzCheck.expect(bytes.count - 15 <= maximumBody, "a cloud frame's body of \(bytes.count - 15) bytes passed the limit")
        }
        if let announcement = CloudAnnouncement(decoding: bytes) {
            FuzzCheck.expect(announcement.encoded == bytes, "an announcement does not encode to its bytes: \(announcement)")
        }
    }

    static func seeds() -> [[UInt8]] {
        let peer = PeerID(bytes: (0..<16).map { UInt8(255 - $0) })!
        let frames: [CloudFrame] = [
            CloudFrame(.open, fromDialler: true, link: 0xDEAD_BEEF_0000_0001, value: 65_536, body: [UInt8](repeating: 1, count: 16)),
            CloudFrame(.accept, fromDialler: false, link: 0xDEAD_BEEF_0000_0001, value: 65_536, body: [UInt8](repeating: 2, count: 8)),
            CloudFrame(.data, fromDialler: true, link: 7, value: 1, body: Array("a sealed session frame".utf8)),
            CloudFrame(.credit, fromDialler: false, link: 7, value: 32_768),
            CloudFrame(.close, fromDialler: true, link: 7),
        ]
        let announcements = [
            CloudAnnouncement(.here, peer: peer, instance: 0x0102_0304_0506_0708, storesFrames: true),
            CloudAnnouncement(.leaving, peer: peer, instance: 9, storesFrames: false),
        ]
        return frames.map(\.encoded) + announcements.map(\.encoded)
    }
}

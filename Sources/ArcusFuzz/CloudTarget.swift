import ArcusCloud
import ArcusMesh

/// What a NATS relay delivers (`CloudFrame(decoding:maximumBody:)` with `CloudFrameSeal.verifies`,
/// `CloudAnnouncement(decoding:)` with `isSigned(on:)`): anyone the relay lets publish on a mesh's
/// subjects can send these. Both formats are fixed, so whatever decodes encodes to exactly its
/// bytes; a tag or a signature the input made up must not verify.
enum CloudTarget {
    static let target = FuzzTarget(
        name: "cloud",
        entryPoint: "ArcusCloud: CloudFrame(decoding:maximumBody:), CloudFrameSeal.verifies, CloudAnnouncement(decoding:), isSigned(on:)",
        run: run, seeds: seeds
    )

    /// The body limit the transport decodes with: `CloudSettings.mtu`, 32 KiB by default.
    static let maximumBody = 32 << 10
    static let mesh = "fuzz-mesh"

    /// Two peers of one mesh and the seal of frames from the first to the second: the seeds are
    /// sealed with it, so mutated seeds test the tag check rather than only the header.
    static let dialler = PeerIdentity()
    static let acceptor = PeerIdentity()
    static let seal: CloudFrameSeal = {
        let key = CloudFrameSeal.pairKey(dialler, with: acceptor.publicKey, mesh: mesh)!
        return CloudFrameSeal(key: key, local: dialler.peerID, localInstance: 1, remote: acceptor.peerID, remoteInstance: 2)
    }()
    static let opening = seal.opening

    static func run(_ bytes: [UInt8]) {
        if let frame = try? CloudFrame(decoding: bytes, maximumBody: maximumBody) {
            FuzzCheck.expect(frame.encoded == Array(bytes.dropLast(CloudFrameSeal.tagSize)),
                             "a cloud frame does not encode to its bytes: \(frame)")
            FuzzCheck.expect(bytes.count - CloudFrame.overhead <= maximumBody,
                             "a cloud frame's body of \(bytes.count - CloudFrame.overhead) bytes passed the limit")
            // Only the dialler's own frames verify, and only in their own direction.
            if opening.verifies(frame) {
                FuzzCheck.expect(seal.seal(frame) == bytes, "a frame verified whose tag is not the pair's: \(frame)")
            }
            FuzzCheck.expect(!seal.verifies(frame), "a frame verified in the direction it was not sealed for")
        }
        if let announcement = CloudAnnouncement(decoding: bytes) {
            FuzzCheck.expect(announcement.encoded == bytes, "an announcement does not encode to its bytes: \(announcement)")
            _ = announcement.isSigned(on: mesh)
        }
    }

    static func seeds() -> [[UInt8]] {
        let frames: [CloudFrame] = [
            CloudFrame(.open, fromDialler: true, link: 1, value: 65_536, body: [UInt8](repeating: 1, count: CloudFrame.openBodySize)),
            CloudFrame(.accept, fromDialler: false, link: 1, value: 65_536, body: [UInt8](repeating: 2, count: 8)),
            CloudFrame(.data, fromDialler: true, link: 1, value: 1, body: Array("a sealed session frame".utf8)),
            CloudFrame(.credit, fromDialler: false, link: 1, value: 32_768),
            CloudFrame(.close, fromDialler: true, link: 1),
        ]
        let announcements = [
            CloudAnnouncement(.here, by: dialler, instance: 0x0102_0304_0506_0708, time: 1_790_000_000_000, storesFrames: true, mesh: mesh),
            CloudAnnouncement(.leaving, by: acceptor, instance: 9, time: 1_790_000_000_001, storesFrames: false, mesh: mesh),
        ]
        return frames.map { seal.seal($0) } + announcements.map(\.encoded)
    }
}

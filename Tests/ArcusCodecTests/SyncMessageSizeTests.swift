import ArcusCRDT
import Testing
@testable import ArcusCodec

/// Sizes the sync protocol relies on.
@Suite("Sync message sizes")
struct SyncMessageSizeTests {
    @Test("two peers in sync spend at most 32 bytes per subscription: a digest summary and an empty answer")
    func inSyncExchange() {
        var encoder = FrameEncoder()
        for position: UInt64 in [0, 70, 1 << 20, 1 << 34] {
            let summary = encoder.encode(.summary(Summary(subscriptionID: 1, version: VersionVector(), digest: [UInt8](repeating: 7, count: 8), position: position)))
            let answer = encoder.encode(.deltaBatch(DeltaBatch(documents: [], subscriptionID: 1, answers: 1)))
            #expect(summary.count + answer.count <= 32, "position \(position): \(summary.count) + \(answer.count)")
        }
    }

    @Test("an attachment chunk of the capacity fits the frame exactly, one byte more does not",
          arguments: [40, 64, 100, 128, 243, 512, 4096, 70_000])
    func chunkCapacity(frameSize: Int) {
        for (offset, total): (UInt64, UInt64) in [(0, 10), (100, 100_000), (1 << 40, 1 << 41), (0, .max)] {
            let capacity = AttachmentChunk.capacity(frameSize: frameSize, offset: offset, totalLength: total)
            // Incompressible bytes, so the frame is laid out as counted.
            var seed: UInt32 = 1
            func bytes(_ count: Int) -> [UInt8] {
                (0..<count).map { _ in seed = seed &* 1_664_525 &+ 1_013_904_223; return UInt8(truncatingIfNeeded: seed >> 24) }
            }
            var encoder = FrameEncoder()
            let hash = bytes(32)
            let frame = encoder.encode(.attachmentChunk(AttachmentChunk(hash: hash, offset: offset, totalLength: total, bytes: bytes(capacity))))
            if capacity > 0 { #expect(frame.count <= frameSize, "frame \(frameSize), capacity \(capacity): \(frame.count) bytes") }
            let over = encoder.encode(.attachmentChunk(AttachmentChunk(hash: hash, offset: offset, totalLength: total, bytes: bytes(capacity + 1))))
            #expect(over.count > frameSize)
        }
    }
}

import ArcusAgent
import ArcusBench
import ArcusCRDT
import ArcusCodec
import ArcusStore
import ArcusSync
import Testing

/// A member (or anyone holding the shared secret) sends frames whose few bytes stand for far
/// more memory (issue 17, finding 5): the session refuses each with a protocol error naming the
/// bound, ends, and leaves the store as it was. (Each attack ends with a frame no build speaks,
/// so that a session that took the hostile frame ends too, on that frame, and the test fails
/// rather than waits.) `arcus bench amplification` measures the memory the full-size attacks take.
@Suite("Amplification frames")
struct AmplificationTests {
    /// A frame of a version no build speaks.
    static let garbage: [UInt8] = [0xFF, 0x00, 0x00, 0x00, 0x00, 0x00]

    static func subscribe(_ encoder: inout FrameEncoder) -> [UInt8] {
        encoder.encode(.subscribe(Subscribe(subscriptionID: 1, query: "SELECT * FROM orders")))
    }

    static func keys(_ count: Int, from start: Int = 0) -> [DocumentKey] {
        (start..<start + count).map { DocumentKey("orders", "k" + String(100_000 + $0)) }
    }

    @Test("a batch whose key names an id over 1 KiB ends the session; nothing of it is merged")
    func longIDInBatch() async throws {
        let long = String(repeating: "x", count: 1021) + "0001"
        let (reason, _) = try await HostileInputTests.attack { encoder in
            [encoder.encode(HostileInputTests.batch([("orders", long)], subscription: 1)), Self.garbage]
        }
        #expect(reason?.contains("document id length of 1025 exceeds the limit of 1024") == true, "\(reason ?? "nil")")
    }

    @Test("a missing message of more than 10,000 keys ends the session before any key is kept")
    func missingFlood() async throws {
        let (reason, _) = try await HostileInputTests.attack { encoder in
            [Self.subscribe(&encoder), encoder.encode(.missing(MissingDocuments(subscriptionID: 1, keys: Self.keys(10_001)))), Self.garbage]
        }
        #expect(reason?.contains("missing documents of 10001 exceeds the limit of 10000") == true, "\(reason ?? "nil")")
    }

    @Test("missing messages that ask for more than 10,000 documents of one subscription in all end the session")
    func missingInParts() async throws {
        let (reason, _) = try await HostileInputTests.attack { encoder in
            [
                Self.subscribe(&encoder),
                encoder.encode(.missing(MissingDocuments(subscriptionID: 1, keys: Self.keys(6_000)))),
                encoder.encode(.missing(MissingDocuments(subscriptionID: 1, keys: Self.keys(6_000, from: 6_000)))),
                Self.garbage,
            ]
        }
        #expect(reason?.contains("asked for more than 10000 documents") == true, "\(reason ?? "nil")")
    }

    @Test("a compressed frame that expands more than 256 times (a zstd bomb) ends the session before it is expanded")
    func zstdBomb() async throws {
        var payload = ByteWriter()
        payload.writeLengthPrefixed([UInt8](repeating: 7, count: 32))
        payload.writeVarint(0)
        payload.writeVarint(2 << 20)
        payload.writeLengthPrefixed([UInt8](repeating: 0, count: 2 << 20))
        let bomb = FrameEncoder.compressedFrame(type: .attachmentChunk, payload: payload.take())
        #expect(bomb.count < 1024)
        let (reason, _) = try await HostileInputTests.attack { _ in [bomb, Self.garbage] }
        #expect(reason?.contains("expanded payload length (256 times") == true, "\(reason ?? "nil")")
    }

    @Test("a 1 MiB frame that decodes to more than 16 MiB (one-byte fields) ends the session")
    func decodesTooLarge() async throws {
        let (reason, _) = try await HostileInputTests.attack { _ in [HostileFrame.manyCellsPlain.bytes, Self.garbage] }
        #expect(reason?.contains("memory one frame decodes to") == true, "\(reason ?? "nil")")
    }
}

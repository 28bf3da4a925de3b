import ArcusCRDT
import Testing
@testable import ArcusCodec

@Suite("Compactness")
struct CompactnessTests {
    @Test("a single field update with a short string, framed, takes at most 20 bytes in a session")
    func singleFieldUpdate() throws {
        let site = SiteID(0xA1B2_C3D4_E5F6_0718)
        var clock: UInt64 = 1_795_000_000_000
        func stamp() -> Stamp {
            clock += 1200
            return Stamp(time: Timestamp(milliseconds: clock), site: site)
        }
        var document = DocumentState()
        var encoder = FrameEncoder(), decoder = FrameDecoder()
        let key = DocumentKey("cars", "507f191e810c19729de860ea")
        // The session has seen this document, its site and field before.
        let first = document.upsert(["color": "red", "make": "toyota"], at: stamp())!
        let opening = encoder.encode(.deltaBatch(DeltaBatch(documents: [DocumentDelta(key: key, state: first)])))
        _ = try decoder.decode(opening)

        let update = document.set(["color"], to: "blue", at: stamp())!
        let frame = encoder.encode(.deltaBatch(DeltaBatch(documents: [DocumentDelta(key: key, state: update)])))
        print("single field update, framed: \(frame.count) bytes (first frame of the session: \(opening.count))")
        #expect(frame.count <= 20)
        guard case .deltaBatch(let batch)? = try decoder.decode(frame) else {
            Issue.record("the update did not decode as a delta batch")
            return
        }
        #expect(batch.documents.first?.state == update)
    }

    @Test("a summary of a four-site version vector is small")
    func summary() {
        var encoder = FrameEncoder()
        let version = VersionVector((1...4).map { (SiteID(UInt64($0) << 40), Timestamp(milliseconds: 1_795_000_000_000 + UInt64($0) * 50)) }
            .reduce(into: [:]) { $0[$1.0] = $1.1 })
        let frame = encoder.encode(.summary(Summary(version: version)))
        #expect(frame.count <= 60)
    }
}

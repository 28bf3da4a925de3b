import ArcusCRDT
import ArcusTestSupport
import Testing
@testable import ArcusCodec

/// A stream's codec context carried into a later session between the same two peers: the digests
/// agree exactly when the decoder has decoded every frame the encoder made, and frames encoded
/// with a carried context decode to the same messages with fewer bytes.
@Suite("Codec contexts carried across sessions")
struct ContextContinuationTests {
    typealias Replica = SyncThroughFramesTests.Replica

    /// One direction's contexts as the two ends keep them between sessions.
    struct Carried {
        var encoding = EncodingContext()
        var decoding = DecodingContext()
        var agree: Bool { encoding.digest == decoding.digest }
    }

    @Test("empty contexts agree; a frame decoded keeps them agreeing; a frame lost on the way does not")
    func digests() throws {
        var carried = Carried()
        #expect(carried.agree)
        var encoder = FrameEncoder(), decoder = FrameDecoder()
        let batch = DeltaBatch(documents: [DocumentDelta(key: DocumentKey("orders", "a"), state: Self.document(["status": "open", "qty": 3]))])
        _ = try decoder.decode(encoder.encode(.deltaBatch(batch)))
        (carried.encoding, carried.decoding) = (encoder.context, decoder.context)
        #expect(carried.agree && carried.encoding.digest != EncodingContext().digest)

        // A second batch encoded but never received.
        _ = encoder.encode(.deltaBatch(DeltaBatch(documents: [DocumentDelta(key: DocumentKey("sensors", "b"), state: Self.document(["zone": "cold"]))])))
        #expect(encoder.context.digest != decoder.context.digest)
    }

    @Test("syncs that carry each direction's contexts converge like fresh ones, in fewer bytes, and cuts only start a direction afresh",
          arguments: SeededRandom.seeds(count: 6, test: "context-continuation"))
    func carriedSyncs(seed: UInt64) throws {
        print("context-continuation seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        let replicas = (0..<3).map { i in
            let tick = TickCounter()
            return Replica(site: SiteID(UInt64(i + 1) << 33 | 9), clock: HybridLogicalClock(physical: { 1_800_000_000_000 + tick.next() }))
        }
        let fresh = (0..<3).map { i in
            let tick = TickCounter()
            return Replica(site: SiteID(UInt64(i + 1) << 33 | 9), clock: HybridLogicalClock(physical: { 1_800_000_000_000 + tick.next() }))
        }
        // Per ordered pair (from, to): the request direction (to → from) and the answer's (from → to).
        var requests: [[Int]: Carried] = [:], answers: [[Int]: Carried] = [:]
        var carriedBytes = 0, freshBytes = 0, resumed = 0, cuts = 0
        let keys = (0..<8).map { DocumentKey(["orders", "sensors", "inventory"][$0 % 3], "d\($0)") }
        for step in 0..<300 {
            if step % 10 == 9 {
                let from = Int.random(in: 0..<3, using: &rng), to = (from + Int.random(in: 1...2, using: &rng)) % 3
                let pair = [from, to]
                // Each direction goes on only when both ends' digests agree, as a resumed link checks.
                var request = requests[pair].flatMap { $0.agree ? $0 : nil } ?? Carried()
                var answer = answers[pair].flatMap { $0.agree ? $0 : nil } ?? Carried()
                if requests[pair]?.agree == true { resumed += 1 }
                var toOut = FrameEncoder(), fromIn = FrameDecoder(), fromOut = FrameEncoder(), toIn = FrameDecoder()
                (toOut.context, fromIn.context) = (request.encoding, request.decoding)
                (fromOut.context, toIn.context) = (answer.encoding, answer.decoding)
                let summaryFrame = toOut.encode(.summary(Summary(version: replicas[to].version)))
                guard case .summary(let summary)? = try fromIn.decode(summaryFrame) else { throw CodecError.invalidValue("summary") }
                let answerDigestBefore = fromOut.context.digest
                let answerFrame = fromOut.encode(.deltaBatch(replicas[from].answer(summary)))
                // Now and then the answer is lost on the way: a direction whose lost frame changed the
                // encoder's context must start afresh; one whose frame interned nothing may go on.
                // A run that drew no cut by its middle sync gets one there: 30 syncs at one in five
                // left about one seed in 800 with none, which tested no cut at all.
                let drawn = Int.random(in: 0..<5, using: &rng) == 0
                if drawn || (cuts == 0 && step == 149) {
                    cuts += 1
                    (request.encoding, request.decoding) = (toOut.context, fromIn.context)
                    (answer.encoding, answer.decoding) = (fromOut.context, toIn.context)
                    let lostFrameChangedContext = fromOut.context.digest != answerDigestBefore
                    #expect(answer.agree == !lostFrameChangedContext,
                            "seed \(seed): a lost frame that \(lostFrameChangedContext ? "changed" : "left") the encoder's context left the digests \(answer.agree ? "agreeing" : "apart")")
                } else {
                    guard case .deltaBatch(let batch)? = try toIn.decode(answerFrame) else { throw CodecError.invalidValue("batch") }
                    var referenceOut = FrameEncoder(), referenceIn = FrameDecoder()
                    let reference = try referenceIn.decode(referenceOut.encode(.deltaBatch(replicas[from].answer(summary))))
                    #expect(.deltaBatch(batch) == reference, "seed \(seed): a carried context changed a batch")
                    carriedBytes += summaryFrame.count + answerFrame.count
                    replicas[to].receive(batch)
                    (request.encoding, request.decoding) = (toOut.context, fromIn.context)
                    (answer.encoding, answer.decoding) = (fromOut.context, toIn.context)
                    #expect(request.agree && answer.agree)
                    freshBytes += try SyncThroughFramesTests.sync(fresh[from], fresh[to])
                }
                (requests[pair], answers[pair]) = (request, answer)
            } else {
                let replica = Int.random(in: 0..<3, using: &rng), key = keys.randomElement(using: &rng)!
                var twin = rng
                try replicas[replica].write(key, &rng)
                try fresh[replica].write(key, &twin)
            }
        }
        for key in keys {
            for r in 0..<3 { #expect(replicas[r].documents[key]?.root == fresh[r].documents[key]?.root, "seed \(seed): \(key) at \(r)") }
        }
        #expect(resumed > 0 && cuts > 0, "seed \(seed): resumed \(resumed), cuts \(cuts)")
        #expect(carriedBytes < freshBytes, "seed \(seed): carried \(carriedBytes) B, fresh \(freshBytes) B")
    }

    static func document(_ fields: [String: Value]) -> DocumentState {
        var state = DocumentState()
        var time: UInt64 = 1_800_000_000_000
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
            time += 1
            _ = state.set(FieldPath([name]), to: value, at: Stamp(time: Timestamp(milliseconds: time), site: SiteID(1)))
        }
        return state
    }
}

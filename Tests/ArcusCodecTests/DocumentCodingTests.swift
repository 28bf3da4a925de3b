import ArcusCRDT
import ArcusTestSupport
import Testing
@testable import ArcusCodec

@Suite("Document encoding")
struct DocumentCodingTests {
    static let sites = [SiteID(0x1111), SiteID(0x2222_0000_0000), SiteID(0xFFFF_FFFF_FFFF_FFFF)]

    func encode(_ state: DocumentState, since: VersionVector? = nil) -> [UInt8] {
        var context = EncodingContext()
        var w = ByteWriter()
        context.writeDocument(state, since: since, to: &w)
        return w.bytes
    }

    func decode(_ bytes: [UInt8]) throws -> DocumentState {
        var context = DecodingContext()
        var r = ByteReader(bytes)
        let state = try context.readDocument(from: &r)
        try r.expectEnd()
        return state
    }

    @Test("a document decodes to exactly the state that was encoded", arguments: SeededRandom.seeds(count: 30, test: "document-round-trip"))
    func roundTrip(seed: UInt64) throws {
        print("document-round-trip seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        let state = RandomMutations.document(&rng, mutations: Int.random(in: 1...60, using: &rng), sites: Self.sites)
        let decoded = try decode(encode(state))
        #expect(decoded == state, "seed \(seed)")
        #expect(decoded.value == state.value)
    }

    @Test("a restarted context writes each document exactly as a fresh one would", arguments: SeededRandom.seeds(count: 10, test: "restarted-context"))
    func restartedContext(seed: UInt64) throws {
        print("restarted-context seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        var context = EncodingContext()
        var w = ByteWriter()
        for _ in 0..<20 {
            let state = RandomMutations.document(&rng, mutations: Int.random(in: 1...30, using: &rng), sites: Self.sites)
            context.restart()
            w.removeAll()
            context.writeDocument(state, to: &w)
            #expect(w.bytes == encode(state), "seed \(seed)")
            #expect(try decode(w.bytes) == state, "seed \(seed)")
        }
    }

    @Test("encoding changes since a version writes the same bytes as encoding the delta", arguments: SeededRandom.seeds(count: 30, test: "since-encoding"))
    func sinceEncoding(seed: UInt64) throws {
        print("since-encoding seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        var state = RandomMutations.document(&rng, mutations: Int.random(in: 1...40, using: &rng), sites: Self.sites)
        let known = state.version
        var time: UInt64 = 1_900_000_000_000
        for _ in 0..<Int.random(in: 1...10, using: &rng) {
            time += 5
            _ = RandomMutations.mutate(&state, at: Stamp(time: Timestamp(milliseconds: time), site: Self.sites.randomElement(using: &rng)!), &rng)
        }
        guard let delta = state.changes(since: known) else { return }
        #expect(encode(state, since: known) == encode(delta), "seed \(seed)")
        // And the delta brings a replica that knew `known` up to date.
        var before = state
        before = try decode(encode(state))
        #expect(before.joined(try decode(encode(state, since: known))).value == state.value)
    }

    @Test("fields out of name order or twice in one map are refused", arguments: [["b", "a"], ["a", "a"]])
    func fieldOrder(names: [String]) throws {
        // A layout that breaks the rules, which only a hostile peer would send.
        let stamp = Stamp(time: Timestamp(milliseconds: 5), site: Self.sites[0])
        let cells = [
            Cell.field(depth: 0, name: 0), Cell(kind: .register, depth: 0, index: 0, order: stamp, event: stamp),
            Cell.field(depth: 0, name: 1), Cell(kind: .register, depth: 0, index: 1, order: stamp, event: stamp),
        ]
        let hostile = DocumentState(validatedCells: cells, names: names, values: [1, 2], attachments: [], version: VersionVector())
        #expect(throws: CodecError.self) { try decode(encode(hostile)) }
    }
}

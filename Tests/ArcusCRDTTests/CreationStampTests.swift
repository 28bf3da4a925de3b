import ArcusTestSupport
import Testing
@testable import ArcusCRDT

/// A store keeps a document created by one write as its JSON and the write's stamp; the state
/// rebuilt from those must be exactly the state the write made, and a state that cannot be
/// rebuilt must never claim a creation stamp.
@Suite("Creation stamps")
struct CreationStampTests {
    static let site = SiteID(0x1234_5678_9ABC)

    /// The state rebuilt from the JSON a store materialises for `state`, as a store rebuilds it.
    /// The text a store writes has its names in order: it is read in one pass, and that pass
    /// must give what the general way (a value, then its fields) gives.
    static func rebuilt(_ state: DocumentState, at stamp: Stamp) throws -> DocumentState? {
        guard let json = state.visibleJSON(adding: ("_id", "doc")), case .object(let fields) = try Value(json: json) else { return nil }
        let general = DocumentState(creating: fields, excluding: "_id", at: stamp)
        let onePass = DocumentState.created(inOrder: json, excluding: "_id", at: stamp)
        #expect(onePass == general, "text a store writes is read in one pass, to the same state: \(json)")
        #expect(DocumentState(creatingFromJSON: json, excluding: "_id", at: stamp) == general)
        return general
    }

    @Test("text not in a store's order is read the general way, with the general way's result", arguments: [
        #"{"_id":"d","b":1,"a":2}"#,                       // names out of order
        #"{"_id":"d","a":1,"a":2}"#,                       // a duplicate name
        #"{"_id":"d","a":{"$binary":"QUJD"}}"#,            // binary, as JSON writes it
        #"{"_id":"d","a":{"$binary":"QUJD","b":1}}"#,      // a map that names $binary
        #"{"_id":"d","a":{"\u0024binary":"QUJD"}}"#,       // binary, spelled otherwise
        #"{"_id":"d","a":{"$binary":"not base64!"}}"#,     // binary that is not
        #"{"a":{"!":1,"$binary":"QUJD"}}"#,                // an object that merely names $binary
        #"{"$binary":"QUJD"}"#,                            // the whole document binary
        #"{"Zone":1,"_id":"d","a":[{"y":1,"x":2}]}"#,      // objects in arrays stay values
        #" { "a" : { "b" : { } } , "_id" : "d" } "#,       // whitespace, an empty map
        #"{"_id":"d","_id":"e","a":1}"#,                   // the excluded name twice
        #"{"_id":"d"}"#, "{}", "[1]", "7",                 // nothing to create
        #"{"a":1} x"#, #"{"a":1"#, #"{"a":}"#,             // broken text
    ])
    func anyOrder(json: String) throws {
        let stamp = Stamp(time: Timestamp(milliseconds: 9, logical: 0), site: Self.site)
        var general: DocumentState?
        if case .object(let fields)? = try? Value(json: json) { general = DocumentState(creating: fields, excluding: "_id", at: stamp) }
        #expect(DocumentState(creatingFromJSON: json, excluding: "_id", at: stamp) == general, "\(json)")
    }

    @Test("maps nested to the limit are read in one pass; one level more is refused both ways")
    func nestingLimit() throws {
        let stamp = Stamp(time: Timestamp(milliseconds: 9, logical: 0), site: Self.site)
        func nested(_ levels: Int) -> String { String(repeating: #"{"a":"#, count: levels) + "1" + String(repeating: "}", count: levels) }
        let deepest = (1...Value.maximumNestingDepth).last { levels in
            guard case .object(let fields)? = try? Value(json: nested(levels)) else { return false }
            return DocumentState(creating: fields, at: stamp) != nil
        }
        let levels = try #require(deepest)
        #expect(DocumentState.created(inOrder: nested(levels), excluding: nil, at: stamp) != nil)
        #expect(DocumentState(creatingFromJSON: nested(levels), at: stamp) != nil)
        #expect(DocumentState(creatingFromJSON: nested(levels + 1), at: stamp) == nil)
    }

    @Test("a new document from random fields claims its stamp and is rebuilt exactly", arguments: SeededRandom.seeds(count: 20, test: "creation-stamp"))
    func created(seed: UInt64) throws {
        print("creation-stamp seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        for n in 0..<200 {
            var fields: [String: Value] = [:]
            for _ in 0..<Int.random(in: 1...6, using: &rng) {
                fields[RandomMutations.names.randomElement(using: &rng)!] = RandomMutations.value(&rng)
            }
            let stamp = Stamp(time: Timestamp(milliseconds: 1_800_000_000_000 + UInt64(n), logical: 0), site: Self.site)
            var state = DocumentState()
            _ = state.upsert(fields, at: stamp)
            // Only a register holding an object (never made by a default upsert) stops the claim.
            #expect(state.creationStamp == stamp, "seed \(seed), fields \(fields)")
            #expect(try Self.rebuilt(state, at: stamp) == state, "seed \(seed), fields \(fields)")
        }
    }

    @Test("a state changed after its creation either is rebuilt exactly or claims no stamp", arguments: SeededRandom.seeds(count: 20, test: "creation-stamp-mutated"))
    func mutated(seed: UInt64) throws {
        print("creation-stamp-mutated seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        var claims = 0, refusals = 0
        for _ in 0..<100 {
            let state = RandomMutations.document(&rng, mutations: Int.random(in: 1...4, using: &rng), sites: [Self.site, SiteID(9)])
            guard let stamp = state.creationStamp else { refusals += 1; continue }
            claims += 1
            #expect(try Self.rebuilt(state, at: stamp) == state, "seed \(seed)")
        }
        #expect(refusals > 0, "random mutations remove, count and conflict: some states must not claim a stamp (seed \(seed))")
    }

    @Test("objects that JSON would read back differently claim no stamp")
    func unreadableShapes() {
        let stamp = Stamp(time: Timestamp(milliseconds: 5, logical: 0), site: Self.site)
        var binaryLookalike = DocumentState()
        _ = binaryLookalike.upsert(["a": ["$binary": "QUJD"]], at: stamp)
        #expect(binaryLookalike.creationStamp == nil)
        var nestedLookalike = DocumentState()
        _ = nestedLookalike.upsert(["a": [["$binary": "QUJD"]]], at: stamp)
        #expect(nestedLookalike.creationStamp == nil)
        var register = DocumentState()
        _ = register.upsert(["a": ["b": 1]], at: stamp, hints: TypeHints(objects: .register))
        #expect(register.creationStamp == nil)
        var removed = DocumentState()
        _ = removed.upsert(["a": 1, "b": 2], at: stamp)
        _ = removed.unset(["b"], at: Stamp(time: Timestamp(milliseconds: 6, logical: 0), site: Self.site))
        #expect(removed.creationStamp == nil)
        var counted = DocumentState()
        _ = counted.increment(["n"], by: .int(1), at: stamp)
        #expect(counted.creationStamp == nil)
    }
}

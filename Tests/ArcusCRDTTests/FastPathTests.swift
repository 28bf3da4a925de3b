import ArcusTestSupport
import Testing
@testable import ArcusCRDT

/// The fast paths must give exactly what the general mutators give: same state, same delta.
@Suite("Fast paths agree with the general mutators")
struct FastPathTests {
    static let sites = [SiteID(3), SiteID(0x7777_0000), SiteID(0xABCD_EF01_0000_0000)]

    /// Every field path the state has, nested ones included.
    static func existingPaths(_ node: MapNode, prefix: [String] = []) -> [[String]] {
        node.fields.elements.flatMap { field -> [[String]] in
            let path = prefix + [field.name]
            return [path] + (field.slot.map.map { existingPaths($0, prefix: path) } ?? [])
        }
    }

    static func path(_ state: DocumentState, _ rng: inout SeededRandom) -> FieldPath {
        let existing = existingPaths(state.root)
        if !existing.isEmpty, Int.random(in: 0..<4, using: &rng) > 0 { return FieldPath(existing.randomElement(using: &rng)!) }
        return RandomMutations.path(&rng)
    }

    @Test("set, upsert and increment", arguments: SeededRandom.seeds(count: 25, test: "fast-paths"))
    func agree(seed: UInt64) {
        print("fast-paths seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        // An ordinary document (scalars, a nested map, counters), then and now a random mutation
        // that gives it odd shapes (type conflicts, removals) where the fast paths must step aside.
        var state = DocumentState()
        var time: UInt64 = 1_900_000_000_000
        // Creating a document takes a fast path too.
        var created = DocumentState(), general = DocumentState()
        let object: [String: Value] = ["a": 1, "nested": ["x": "y", "deeper": ["z": [1, 2]], "empty": [:]], "b": "two"]
        let createStamp = Stamp(time: Timestamp(milliseconds: time - 1), site: Self.sites[1])
        #expect(created.upsert(object, at: createStamp) == general.generalUpsert(object, strategy: .merge, at: createStamp, hints: .objectsAreMaps))
        #expect(created == general)
        let start = Stamp(time: Timestamp(milliseconds: time), site: Self.sites[0])
        state.upsert(["status": "open", "color": "red", "zone": 4, "owner": ["name": "ada", "tags": [1, 2]]], at: start)
        for (i, site) in Self.sites.enumerated() {
            state.increment(["qty"], by: .int(Int64(i)), at: Stamp(time: Timestamp(milliseconds: time + 1), site: site))
            state.increment(["meta", "scans"], by: .int(1), at: Stamp(time: Timestamp(milliseconds: time + 2), site: site))
        }
        time += 3
        var fastHits = 0
        for _ in 0..<200 {
            time += UInt64.random(in: 1...9, using: &rng)
            let stamp = Stamp(time: Timestamp(milliseconds: time), site: Self.sites.randomElement(using: &rng)!)
            var fast = state, general = state
            let fastDelta: DocumentState?, generalDelta: DocumentState?
            switch Int.random(in: 0..<3, using: &rng) {
            case 0:
                let path = Self.path(state, &rng), value = RandomMutations.value(&rng)
                var probe = state
                if probe.fastWriteRegisters([(path.components, value)], mergingObjects: false, stamp: stamp, hints: .objectsAreMaps) != nil { fastHits += 1 }
                fastDelta = fast.set(path, to: value, at: stamp)
                generalDelta = general.generalSet(path, to: value, at: stamp, hints: .objectsAreMaps)
            case 1:
                var fields: [String: Value] = [:]
                let roots = state.root.fields.keys
                for _ in 0..<Int.random(in: 1...3, using: &rng) {
                    let name = !roots.isEmpty && Int.random(in: 0..<4, using: &rng) > 0 ? roots.randomElement(using: &rng)! : RandomMutations.names.randomElement(using: &rng)!
                    switch Int.random(in: 0..<6, using: &rng) {
                    case 0: fields[name] = ["name": "bo", "tags": ["x": true], "new\(Int.random(in: 0...3, using: &rng))": 1.5]
                    case 1: fields[name] = RandomMutations.value(&rng)
                    default: fields[name] = .int(Int64.random(in: 0...9, using: &rng))
                    }
                }
                var probe = state
                if probe.fastWriteRegisters(fields.map { ([$0.key], $0.value) }, mergingObjects: true, stamp: stamp, hints: .objectsAreMaps) != nil { fastHits += 1 }
                fastDelta = fast.upsert(fields, at: stamp)
                generalDelta = general.generalUpsert(fields, strategy: .merge, at: stamp, hints: .objectsAreMaps)
            default:
                let path = Self.path(state, &rng)
                let amount = Number.int(Int64.random(in: -3...3, using: &rng))
                var probe = state
                if probe.fastIncrement(path, by: amount, at: stamp) != nil { fastHits += 1 }
                fastDelta = fast.increment(path, by: amount, at: stamp)
                generalDelta = general.generalIncrement(path, by: amount, at: stamp)
            }
            #expect(fast == general, "seed \(seed): states differ")
            #expect(fastDelta == generalDelta, "seed \(seed): deltas differ")
            if fast != general || fastDelta != generalDelta { return }
            state = general
            // Mix in other mutations now and then so states take every shape.
            if Int.random(in: 0..<10, using: &rng) == 0 {
                _ = RandomMutations.mutate(&state, at: Stamp(time: Timestamp(milliseconds: time, logical: 1), site: stamp.site), &rng)
            }
        }
        print("fast-paths: \(fastHits) of 200 writes took a fast path")
        #expect(fastHits >= 10, "seed \(seed): too few writes exercised the fast paths to compare them")
    }
}

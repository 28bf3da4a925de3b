import Testing
@testable import ArcusCRDT

/// The registers of a state by field path, as the store's conflict view reads them.
@Suite("Registers by path")
struct RegisterPathTests {
    let site = SiteID(7)
    func stamp(_ ms: UInt64) -> Stamp { Stamp(time: Timestamp(milliseconds: ms), site: site) }

    @Test("forEachRegister and register(at:) name each value with its field's path, nested maps included")
    func registersByPath() {
        var state = DocumentState()
        _ = state.upsert(["color": "red", "owner": ["name": "ann", "address": ["city": "oslo"]], "tags": ["a", "b"]], at: stamp(1))
        _ = state.increment(["visits"], by: Number(.int(2))!, at: stamp(2))
        var seen: [String: Value] = [:]
        state.forEachRegister { path, entry in
            if case .value(let value) = entry.payload { seen[path.description] = value }
        }
        #expect(seen == ["color": "red", "owner.name": "ann", "owner.address.city": "oslo", "tags": ["a", "b"]])
        #expect(state.register(at: ["owner", "name"])?.payload == .value("ann"))
        #expect(state.register(at: ["owner"]) == nil, "a map has no register")
        #expect(state.register(at: ["visits"]) == nil, "a counter has no register")
        #expect(state.register(at: ["nothing", "here"]) == nil)
    }

    @Test("writtenFieldPaths lists each field a delta writes or removes once, counters included, maps' markers not")
    func writtenPaths() {
        var state = DocumentState()
        _ = state.upsert(["color": "red", "owner": ["name": "ann", "age": 30]], at: stamp(1))
        let set = state.set(["owner", "name"], to: "bob", at: stamp(2))
        #expect(set?.writtenFieldPaths == [["owner", "name"]])
        let replaced = state.set(["owner"], to: "nobody", at: stamp(3))
        #expect(Set(replaced?.writtenFieldPaths ?? []) == [["owner"], ["owner", "name"], ["owner", "age"]])
        let counted = state.increment(["visits"], by: Number(.int(1))!, at: stamp(4))
        #expect(counted?.writtenFieldPaths == [["visits"]])
    }
}

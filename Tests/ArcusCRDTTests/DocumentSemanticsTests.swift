import Testing
@testable import ArcusCRDT

/// A replica of one document with its own site and a hand-driven clock.
struct TestReplica {
    var site: SiteID
    var clock: UInt64 = 1000
    var state = DocumentState()

    init(_ site: UInt64) { self.site = SiteID(site) }

    mutating func stamp() -> Stamp {
        clock += 1
        return Stamp(time: Timestamp(milliseconds: clock), site: site)
    }

    mutating func receive(_ delta: DocumentState?) {
        guard let delta else { return }
        state.join(delta)
        clock = max(clock, delta.version.maxTime.milliseconds)
    }

    var json: String { state.value?.jsonString ?? "absent" }
}

@Suite("Document semantics")
struct DocumentSemanticsTests {
    @Test("upsert merges the named fields and leaves the others alone")
    func upsertMerges() {
        var a = TestReplica(1)
        a.state.upsert(["name": "Sam", "age": 45, "isOnline": false], at: a.stamp())
        a.state.upsert(["name": "Susan", "age": 31], at: a.stamp())
        #expect(a.json == #"{"age":31,"isOnline":false,"name":"Susan"}"#)
    }

    @Test("the later write wins a register; a tie in time goes to the larger site id")
    func lastWriterWins() {
        var a = TestReplica(1), b = TestReplica(2)
        let d1 = a.state.upsert(["color": "red"], at: Stamp(time: Timestamp(milliseconds: 5), site: a.site))
        let d2 = b.state.upsert(["color": "blue"], at: Stamp(time: Timestamp(milliseconds: 5), site: b.site))
        a.receive(d2)
        b.receive(d1)
        #expect(a.json == #"{"color":"blue"}"#)
        #expect(a.state == b.state)
    }

    @Test("arrays and objects hinted as REGISTER are replaced whole")
    func registersReplaceWhole() {
        var a = TestReplica(1)
        let hints = TypeHints(fields: ["location": .register])
        a.state.upsert(["location": ["coordinates": [1.5, 2.5], "address": "x"], "tags": [1, 2]], at: a.stamp(), hints: hints)
        a.state.upsert(["location": ["address": "y"], "tags": [3]], at: a.stamp(), hints: hints)
        #expect(a.json == #"{"location":{"address":"y"},"tags":[3]}"#)
    }

    @Test("MAP fields written concurrently on two replicas both survive")
    func mapFieldsMerge() {
        var a = TestReplica(1), b = TestReplica(2)
        let base = a.state.upsert(["features": ["trim": "standard"]], at: a.stamp())
        b.receive(base)
        let da = a.state.upsert(["features": ["speakers": 5]], at: a.stamp())
        let db = b.state.set(["features", "color"], to: "red", at: b.stamp())
        a.receive(db)
        b.receive(da)
        #expect(a.json == #"{"features":{"color":"red","speakers":5,"trim":"standard"}}"#)
        #expect(a.state == b.state)
    }

    @Test("a field removed on one replica and written concurrently on another keeps the write")
    func addWinsOverConcurrentRemoval() {
        var a = TestReplica(1), b = TestReplica(2)
        b.receive(a.state.upsert(["status": "open", "note": "x"], at: a.stamp()))
        let removal = a.state.unset(["status"], at: a.stamp())
        let write = b.state.set(["status"], to: "filled", at: b.stamp())
        a.receive(write)
        b.receive(removal)
        #expect(a.json == #"{"note":"x","status":"filled"}"#)
        #expect(a.state == b.state)
    }

    @Test("a removal removes what its replica had seen, and keeps no value")
    func removalKeepsOnlyMetadata() {
        var a = TestReplica(1)
        a.state.upsert(["secret": "hunter2"], at: a.stamp())
        a.state.unset(["secret"], at: a.stamp())
        #expect(a.json == "{}")
        let register = a.state.slot(at: ["secret"])?.register
        #expect(register?.isRemoved == true)
        #expect(!"\(a.state)".contains("hunter2"))
    }

    @Test("a write made after a removal was seen recreates the field")
    func writeAfterRemovalRecreates() {
        var a = TestReplica(1), b = TestReplica(2)
        b.receive(a.state.upsert(["status": "open"], at: a.stamp()))
        a.receive(b.state.unset(["status"], at: b.stamp()))
        b.receive(a.state.set(["status"], to: "reopened", at: a.stamp()))
        #expect(a.json == #"{"status":"reopened"}"#)
        #expect(a.state == b.state)
    }

    @Test("a removed document stays removed; a concurrent field write survives alone")
    func documentRemoval() {
        var a = TestReplica(1), b = TestReplica(2)
        b.receive(a.state.upsert(["make": "toyota", "color": "red", "mileage": 160000], at: a.stamp()))
        let removal = a.state.remove(at: a.stamp())
        #expect(!a.state.isLive)
        let concurrent = b.state.set(["color"], to: "blue", at: b.stamp())
        a.receive(concurrent)
        b.receive(removal)
        #expect(a.json == #"{"color":"blue"}"#)
        #expect(a.state == b.state)
    }

    @Test("a document created again after its removal was seen does not bring back old fields")
    func recreateAfterRemoval() {
        var a = TestReplica(1), b = TestReplica(2)
        b.receive(a.state.upsert(["make": "toyota", "color": "red"], at: a.stamp()))
        b.receive(a.state.remove(at: a.stamp()))
        a.receive(b.state.upsert(["make": "honda"], at: b.stamp()))
        #expect(a.json == #"{"make":"honda"}"#)
        #expect(a.state == b.state)
    }

    @Test("counter increments from every replica add up in any order")
    func countersAddUp() {
        var a = TestReplica(1), b = TestReplica(2), c = TestReplica(3)
        var deltas: [DocumentState] = []
        deltas.append(a.state.increment(["mileage"], by: .int(200), at: a.stamp())!)
        deltas.append(b.state.increment(["mileage"], by: .int(5), at: b.stamp())!)
        deltas.append(a.state.increment(["mileage"], by: .int(-1), at: a.stamp())!)
        deltas.append(b.state.increment(["mileage"], by: .int(10), at: b.stamp())!)
        for d in deltas.reversed() { c.receive(d) }
        for d in deltas { a.receive(d); b.receive(d) }
        #expect(c.json == #"{"mileage":214}"#)
        #expect(a.state == c.state && b.state == c.state)
    }

    @Test("increments concurrent with a counter's removal survive it")
    func counterRemovalIsAddWins() {
        var a = TestReplica(1), b = TestReplica(2)
        b.receive(a.state.increment(["visits"], by: .int(3), at: a.stamp()))
        let removal = a.state.unset(["visits"], at: a.stamp())
        let inc = b.state.increment(["visits"], by: .int(2), at: b.stamp())
        a.receive(inc)
        b.receive(removal)
        #expect(a.json == #"{"visits":2}"#)
        #expect(a.state == b.state)
        b.receive(a.state.increment(["visits"], by: .int(1), at: a.stamp()))
        #expect(b.json == #"{"visits":3}"#)
    }

    @Test("incrementing a field that holds something else replaces it by a counter from zero")
    func incrementReplaces() {
        var a = TestReplica(1)
        a.state.upsert(["qty": "many"], at: a.stamp())
        a.state.increment(["qty"], by: .int(2), at: a.stamp())
        #expect(a.json == #"{"qty":2}"#)
        a.state.replaceWithCounter(["qty"], at: a.stamp())
        #expect(a.json == #"{"qty":0}"#)
        a.state.set(["qty"], to: "few", at: a.stamp())
        #expect(a.json == #"{"qty":"few"}"#)
    }

    @Test("a map on one replica and an array on another converge to one value and keep both")
    func typeConflictConverges() {
        var a = TestReplica(1), b = TestReplica(2)
        let da = a.state.upsert(["name": "bob jones", "address": ["street": "long road", "house number": 10298, "zip": "90210"]], at: Stamp(time: Timestamp(milliseconds: 50), site: a.site))
        let db = b.state.upsert(["name": "bob jones", "address": [10298, "long road", "90210"]], at: Stamp(time: Timestamp(milliseconds: 50), site: b.site))
        a.receive(db)
        b.receive(da)
        #expect(a.state == b.state)
        #expect(a.json == b.json)
        let slot = a.state.slot(at: ["address"])!
        #expect(slot.map?.liveOrder != nil, "the map version is kept")
        #expect(slot.register?.isRemoved == false, "the array version is kept")
        // No ping-pong: re-delivering either side changes nothing.
        let before = a.state
        a.receive(da)
        a.receive(db)
        #expect(a.state == before)
    }

    @Test("writing into a map over a register replaces the register; old map fields do not return")
    func replacingTypesSequentially() {
        var a = TestReplica(1)
        a.state.upsert(["features": ["a": 1, "b": 2]], at: a.stamp())
        a.state.set(["features"], to: 5, at: a.stamp())
        #expect(a.json == #"{"features":5}"#)
        a.state.set(["features", "c"], to: 3, at: a.stamp())
        #expect(a.json == #"{"features":{"c":3}}"#)
    }

    @Test("set replaces a map whole; upsert merges into it")
    func setReplacesUpsertMerges() {
        var a = TestReplica(1)
        a.state.upsert(["owner": ["name": "john", "phone": "555"]], at: a.stamp())
        a.state.upsert(["owner": ["phone": "556"]], at: a.stamp())
        #expect(a.json == #"{"owner":{"name":"john","phone":"556"}}"#)
        a.state.set(["owner"], to: ["name": "jane"], at: a.stamp())
        #expect(a.json == #"{"owner":{"name":"jane"}}"#)
    }

    @Test("an empty map exists until removed, and unsetting its last field leaves it empty")
    func emptyMaps() {
        var a = TestReplica(1)
        a.state.upsert(["tags": [:]], at: a.stamp())
        #expect(a.json == #"{"tags":{}}"#)
        a.state.set(["tags", "x"], to: true, at: a.stamp())
        a.state.unset(["tags", "x"], at: a.stamp())
        #expect(a.json == #"{"tags":{}}"#)
    }

    @Test("default data loses to every real write, on any replica, in any order (seed 001)")
    func defaultDataNeverOverwrites() {
        var a = TestReplica(1), b = TestReplica(2)
        // Device A loads the document from the backend as default data, then edits it.
        let aDefault = a.state.upsert(["firstName": "Adam"], strategy: .insertDefaultIfAbsent, at: a.stamp())
        let aEdit = a.state.upsert(["firstName": "Max"], at: a.stamp())
        // Device B, not yet synced, loads the same default data later.
        b.clock += 100
        let bDefault = b.state.upsert(["firstName": "Adam"], strategy: .insertDefaultIfAbsent, at: b.stamp())
        a.receive(bDefault)
        b.receive(aEdit)
        b.receive(aDefault)
        #expect(a.json == #"{"firstName":"Max"}"#)
        #expect(a.state == b.state)
        // Loading defaults again on a replica that has the document does nothing.
        #expect(b.state.upsert(["firstName": "Adam"], strategy: .insertDefaultIfAbsent, at: b.stamp()) == nil)
    }

    @Test("insertIfAbsent writes only documents that do not exist locally")
    func insertIfAbsent() {
        var a = TestReplica(1)
        #expect(a.state.upsert(["v": 1], strategy: .insertIfAbsent, at: a.stamp()) != nil)
        #expect(a.state.upsert(["v": 2], strategy: .insertIfAbsent, at: a.stamp()) == nil)
        #expect(a.json == #"{"v":1}"#)
    }

    @Test("updateDifferentOnly writes only the fields whose value changed")
    func updateDifferentOnly() {
        var a = TestReplica(1)
        a.state.upsert(["a": 1, "b": ["c": "x", "d": "y"]], at: a.stamp())
        let delta = a.state.upsert(["a": 1, "b": ["c": "x", "d": "z"]], strategy: .updateDifferentOnly, at: a.stamp())
        #expect(delta?.slot(at: ["a"]) == nil)
        #expect(delta?.slot(at: ["b", "c"]) == nil)
        #expect(delta?.slot(at: ["b", "d"])?.register?.payload == .value("z"))
        #expect(a.state.upsert(["a": 1], strategy: .updateDifferentOnly, at: a.stamp()) == nil)
    }

    @Test("changes(since:) brings a replica that covers the version up to date")
    func changesSince() {
        var a = TestReplica(1), b = TestReplica(2)
        b.receive(a.state.upsert(["x": 1, "y": ["z": 2]], at: a.stamp()))
        let known = b.state.version
        a.state.set(["y", "z"], to: 3, at: a.stamp())
        a.state.unset(["x"], at: a.stamp())
        let delta = a.state.changes(since: known)!
        #expect(delta.slot(at: ["y", "z"])?.register?.payload == .value(3))
        b.receive(delta)
        #expect(b.state == a.state)
        #expect(a.state.changes(since: b.state.version) == nil)
    }

    @Test("attachment fields hold a token and show it to readers")
    func attachments() {
        var a = TestReplica(1)
        let token = AttachmentToken(hash: Array(repeating: 0xAB, count: 32), length: 1234, metadata: ["name": "photo.jpg"])
        a.state.setAttachment(["photo"], to: token, at: a.stamp())
        let photo = a.state.value?.objectValue?["photo"]?.objectValue
        #expect(photo?["len"] == .int(1234))
        #expect(photo?["_attachment"] == .string(String(repeating: "ab", count: 32)))
    }
}

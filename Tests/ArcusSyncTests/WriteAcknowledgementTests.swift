import ArcusCRDT
import ArcusStore
import ArcusSync
import ArcusTestSupport
import Testing

/// Whether a write has reached a peer: the write's commit, and what each peer served has
/// acknowledged of the log (`SyncEngine.peer(_:holding:)`), the ground of `--wait-synced`.
@Suite("Write acknowledgements")
struct WriteAcknowledgementTests {
    static func key(_ peer: Peer) -> String { peer.engine.peerID.map { $0 < 16 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined() }

    @Test("a subscriber holds a write once it acknowledged the document's row; a peer that subscribes to something else never does; one cut off stays behind until it is back")
    func holdsAfterAcknowledgement() async throws {
        let a = try Peer("a"), b = try Peer("b"), c = try Peer("c")
        _ = try b.subscribe("SELECT * FROM cars")
        _ = try c.subscribe("SELECT * FROM trucks")
        var toB = connect(a, b)
        let toC = connect(a, c)
        #expect(await toB.caughtUp())
        #expect(await toC.caughtUp())

        let insert = try a.store.execute("INSERT INTO cars DOCUMENTS ({'_id': 'x', 'color': 'blue'})")
        let commit = try #require(insert.commitID)
        let written = insert.writtenDocuments
        #expect(written == [DocumentKey(collection: "cars", id: "x")])
        #expect(try Value(json: insert.jsonString)[path: "commit_id"] == .int(commit))
        #expect(try await eventually { try a.engine.peer(Self.key(b), holding: written) == .holds })
        #expect(try ids(b.store, "cars") == ["x"])
        #expect(try a.engine.peer(Self.key(c), holding: written) == .notSubscribed(written[0]))
        // A peer never met cannot be vouched for from here.
        let d = try Peer("d")
        #expect(try a.engine.peer(Self.key(d), holding: written) == .neverServed)
        // A read commits nothing.
        #expect(try a.store.execute("SELECT * FROM cars").commitID == nil)

        toB.close()
        await toB.ended()
        let update = try a.store.execute("UPDATE cars SET color = 'red' WHERE _id = 'x'")
        let later = try #require(update.commitID)
        #expect(later > commit)
        guard case .behind(let document, let acknowledged, let needed) = try a.engine.peer(Self.key(b), holding: update.writtenDocuments) else {
            Issue.record("b was cut off, yet it holds the update")
            return
        }
        #expect(document == written[0] && acknowledged < needed && needed == later)

        toB = connect(a, b)
        #expect(try await eventually { try a.engine.peer(Self.key(b), holding: update.writtenDocuments) == .holds })
        #expect(try b.store.execute("SELECT color FROM cars").items == [["color": "red"]])
    }

    @Test("what a peer acknowledged in an earlier session is read back from the store after a restart")
    func acknowledgementsOutliveTheEngine() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try Store(directory: directory.url)
        let a = try Peer("a", store: store), b = try Peer("b")
        _ = try b.subscribe("SELECT * FROM cars")
        let connection = connect(a, b)
        let insert = try a.store.execute("INSERT INTO cars DOCUMENTS ({'_id': 'x'})")
        #expect(try await eventually { try a.engine.peer(Self.key(b), holding: insert.writtenDocuments) == .holds })
        connection.close()
        await connection.ended()
        a.engine.stop()

        let again = try Peer("a again", store: store)
        #expect(again.engine.acknowledgements(of: Self.key(b)).map(\.position).max() ?? 0 >= insert.commitID ?? .max)
        #expect(try again.engine.peer(Self.key(b), holding: insert.writtenDocuments) == .holds)
    }
}

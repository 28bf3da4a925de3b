import ArcusCRDT
import ArcusCodec
import ArcusStore
import ArcusSync
import ArcusTestSupport
import Foundation
import Testing

/// A power cut under `durability = normal` can take a device's last commits: its data directory
/// comes back as it was some commits earlier, though its peers already hold those writes. They
/// must come back from the peers — which, until now, never sent a site its own events.
@Suite("Commits a power cut took come back from peers")
struct LostCommitsRecoveryTests {
    @Test("a device's own writes lost with its last commits come back, writes made since included")
    func ownWritesComeBack() async throws {
        let directory = TemporaryDirectory(), restored = TemporaryDirectory()
        defer { directory.remove(); restored.remove() }
        let server = try Peer("server")
        _ = try server.subscribe("SELECT * FROM docs")
        do {
            let device = try Peer("device", store: Store(directory: directory.url))
            _ = try device.subscribe("SELECT * FROM docs")
            _ = try device.store.execute("INSERT INTO docs DOCUMENTS ({'_id': 'd1', 'v': 1})")
            let first = connect(device, server)
            #expect(await first.caughtUp())
            // What the disk held when the power went: everything up to here.
            try FileManager.default.copyItem(at: directory.url, to: restored.url)
            _ = try device.store.execute("INSERT INTO docs DOCUMENTS ({'_id': 'd2', 'v': 2})")
            _ = try device.store.execute("UPDATE docs SET v = 10 WHERE _id = 'd1'")
            #expect(try await eventually { try contents(server.store, "docs") == contents(device.store, "docs") })
            #expect(await first.caughtUp())
            first.close()
            await first.ended()
            device.engine.stop()
        }
        // The device boots from what the disk kept, and writes before it meets the server.
        let device = try Peer("device", store: Store(directory: restored.url))
        #expect(try ids(device.store, "docs") == ["d1"])
        _ = try device.store.execute("INSERT INTO docs DOCUMENTS ({'_id': 'd3', 'v': 3})")
        let second = connect(device, server)
        #expect(await second.caughtUp())
        #expect(try await eventually { try contents(device.store, "docs") == contents(server.store, "docs") })
        let held = try device.store.execute("SELECT * FROM docs ORDER BY _id").items.map(\.jsonString)
        #expect(held == [#"{"_id":"d1","v":10}"#, #"{"_id":"d2","v":2}"#, #"{"_id":"d3","v":3}"#])
        device.engine.stop(); server.engine.stop()
    }

    @Test("peers in sync send a device none of its own writes back")
    func noEcho() async throws {
        let device = try Peer("device"), server = try Peer("server")
        for peer in [device, server] { _ = try peer.subscribe("SELECT * FROM docs") }
        for i in 0..<20 { _ = try device.store.execute("INSERT INTO docs DOCUMENTS ({'_id': 'd\(i)'})") }
        let first = connect(device, server)
        #expect(await first.caughtUp())
        #expect(try await eventually { try ids(server.store, "docs").count == 20 })
        try await Task.sleep(for: .milliseconds(100))
        #expect(await first.right.statistics.documentsSent == 0)
        first.close()
        await first.ended()
        let second = connect(device, server)
        #expect(await second.caughtUp())
        try await Task.sleep(for: .milliseconds(100))
        #expect(await second.right.statistics.documentsSent == 0)
        device.engine.stop(); server.engine.stop()
    }
}

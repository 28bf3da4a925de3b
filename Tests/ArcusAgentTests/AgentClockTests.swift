import ArcusCRDT
import ArcusCodec
import Foundation
import Testing
@testable import ArcusStore

/// `arcus agent` and the clock: a data directory poisoned before remote times were bounded is
/// repaired when the agent opens it, and the agent says so once; the skew allowance is an option.
@Suite("Agent clock")
struct AgentClockTests {
    /// A data directory whose store took in a liar's write stamped near the end of time (as the
    /// old merge path did) and then stamped the user's next write after it.
    static func poisonedDataDirectory() throws -> URL {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-agent-clock-\(UUID().uuidString)")
        let store = try Store(directory: data)
        try store.collection("orders").upsert(["_id": "o1", "status": "open"])
        let key = DocumentKey("orders", "o1"), poison = Timestamp(rawValue: .max - 4)
        try store.write { tx in
            let row = DocumentRows.RowID(key)
            var state = try #require(try tx.load(row))
            var liars = DocumentState()
            _ = liars.set(["status"], to: "hacked", at: Stamp(time: poison, site: SiteID(0x6666)))
            state.join(liars)
            try tx.save(row, state: state, delta: liars, wasLive: true, hadAttachments: false, local: false)
        }
        let site = store.site
        try store.write { tx in
            try tx.apply(key) { state, _ in state.set(["note"], to: "mine", at: Stamp(time: Timestamp(rawValue: poison.rawValue + 1), site: site)) }
        }
        return data
    }

    @Test("an agent started on a poisoned data directory repairs it, logs it once, and keeps the user's write")
    func recoveryIsLogged() async throws {
        let data = try Self.poisonedDataDirectory()
        defer { try? FileManager.default.removeItem(at: data) }
        let agent = try await RunningAgent.launch(data: data.path, ["--clock-skew-allowance", "2d"])
        #expect(await agent.halt() == 0)
        #expect(agent.log.components(separatedBy: "the store held events stamped beyond").count == 2, "\(agent.log)")
        #expect(agent.log.contains("1 document(s) repaired"), "\(agent.log)")
        let again = try await RunningAgent.launch(data: data.path)
        #expect(await again.halt() == 0)
        #expect(!again.log.contains("stamped beyond"), "\(again.log)")

        let store = try Store(directory: data)
        // The liar's value is gone; the one it overwrote was gone before (a register keeps only
        // the latest), and the user's own write stays.
        #expect(try store.collection("orders").findByID("o1").exec() == ["_id": "o1", "note": "mine"])
        #expect(store.lastTime <= store.latestAdmissibleTime)
    }

    @Test("--clock-skew-allowance takes a whole number and a unit, and refuses anything else before the agent starts")
    func allowanceOption() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-agent-clock-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }
        for bad in ["soon", "7", "-1d", "400d", "1.5h"] {
            let outcome = try await ArcusProcess.run(["agent", "--data", data.path, "--http", "127.0.0.1:0", "--clock-skew-allowance=\(bad)"])
            #expect(outcome.status == 2, "\(bad): \(outcome.standardError)")
            #expect(outcome.standardError.contains("--clock-skew-allowance \(bad.debugDescription) is not a duration from 0s to 366d"),
                    "\(outcome.standardError)")
        }
    }
}

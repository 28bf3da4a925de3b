import ArcusAgent
import ArcusCRDT
import ArcusStore

/// Checks what the demo's peers hold after settling, against what the workload wrote.
public enum DemoVerification {
    public struct Outcome: Sendable {
        /// Readings inserted and never deleted that a peer lacks, and tally increments it lacks,
        /// summed over the peers.
        public var lost = 0
        /// Deleted readings a peer still has.
        public var resurrected = 0
        /// Readings nobody wrote, or tally increments nobody made (a delta applied twice).
        public var unexpected = 0

        public var isClean: Bool { lost == 0 && resurrected == 0 && unexpected == 0 }
    }

    static let collections = ["readings", "tallies", "board"]

    /// How many stores hold other documents than the first.
    static func differing(_ stores: [Store]) throws -> Int {
        let reference = try contents(stores[0])
        return try stores.dropFirst().filter { try contents($0) != reference }.count
    }

    private static func contents(_ store: Store) throws -> [String] {
        try collections.map { try store.execute("SELECT * FROM \($0) ORDER BY _id").items.map(\.jsonString).joined(separator: "\n") }
    }

    static func check(_ stores: [Store], against workload: DemoWorkload) throws -> Outcome {
        var outcome = Outcome()
        for store in stores {
            let readings = Set(try store.execute("SELECT * FROM readings").items.compactMap { $0[path: ["_id"]]?.stringValue })
            outcome.lost += workload.liveIDs.subtracting(readings).count
            outcome.resurrected += readings.intersection(workload.removedIDs).count
            outcome.unexpected += readings.subtracting(workload.liveIDs).subtracting(workload.removedIDs).count
            for (tally, total) in workload.tallyTotals.enumerated() {
                let item = try store.execute("SELECT * FROM tallies WHERE _id = :id", arguments: ["id": .string("t\(tally)")]).items.first
                let count = Int(item?[path: ["count"]]?.numberValue ?? 0)
                if count < total { outcome.lost += total - count }
                if count > total { outcome.unexpected += count - total }
            }
        }
        return outcome
    }
}

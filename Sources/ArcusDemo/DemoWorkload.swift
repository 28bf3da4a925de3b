import ArcusAgent
import ArcusCRDT
import ArcusStore

/// What the demo's peers write, through DQL as an app would, and what the mesh must therefore
/// end up holding: every reading inserted and not deleted, none deleted, and each tally equal
/// to the increments made anywhere.
///
/// - `readings`: documents a peer creates, then updates or deletes (its own only).
/// - `tallies`: a few shared counters every peer increments.
/// - `board`: a few shared documents whose `holder` every peer overwrites (last write wins).
struct DemoWorkload {
    static let tallies = 4
    static let boards = 4

    private var random: SplitMix64
    private var next: [Int]
    /// Per peer, its readings that are still live.
    private var live: [[String]]
    private(set) var liveIDs: Set<String> = []
    private(set) var removedIDs: Set<String> = []
    private(set) var tallyTotals = Array(repeating: 0, count: DemoWorkload.tallies)
    private(set) var writes = 0

    init(peers: Int, seed: UInt64) {
        random = SplitMix64(seed: seed ^ 0x5EED_F00D)
        next = Array(repeating: 0, count: peers)
        live = Array(repeating: [], count: peers)
    }

    /// The shared documents, written as defaults (at time zero) on every peer, so any real
    /// write wins over them and they merge without conflict.
    func prepare(_ store: Store) throws {
        let tallies = (0..<Self.tallies).map { "{'_id': 't\($0)', 'label': 'tally \($0)'}" }
        let boards = (0..<Self.boards).map { "{'_id': 'b\($0)', 'holder': 'nobody'}" }
        _ = try store.execute("INSERT INTO tallies INITIAL DOCUMENTS \(tallies.map { "(\($0))" }.joined(separator: ", "))")
        _ = try store.execute("INSERT INTO board INITIAL DOCUMENTS \(boards.map { "(\($0))" }.joined(separator: ", "))")
    }

    /// One write by `peer`, chosen at random.
    mutating func write(by peer: Int, to store: Store) throws {
        writes += 1
        let roll = Int.random(in: 0..<100, using: &random)
        switch roll {
        case 0..<20 where !live[peer].isEmpty:
            let id = live[peer].randomElement(using: &random)!
            _ = try store.execute("UPDATE readings SET value = :value, updates = :n WHERE _id = :id",
                                  arguments: ["id": .string(id), "value": .int(Int64.random(in: 0..<1000, using: &random)), "n": .int(Int64(writes))])
        case 20..<35:
            let tally = Int.random(in: 0..<Self.tallies, using: &random)
            _ = try store.execute("UPDATE COLLECTION tallies (count PN_COUNTER) APPLY count PN_INCREMENT BY 1 WHERE _id = :id",
                                  arguments: ["id": .string("t\(tally)")])
            tallyTotals[tally] += 1
        case 35..<45:
            let board = Int.random(in: 0..<Self.boards, using: &random)
            _ = try store.execute("UPDATE board SET holder = :holder WHERE _id = :id",
                                  arguments: ["id": .string("b\(board)"), "holder": .string("peer-\(peer)")])
        case 45..<55 where !live[peer].isEmpty:
            let index = Int.random(in: 0..<live[peer].count, using: &random)
            let id = live[peer].remove(at: index)
            _ = try store.execute("DELETE FROM readings WHERE _id = :id", arguments: ["id": .string(id)])
            liveIDs.remove(id)
            removedIDs.insert(id)
        default:
            let id = "p\(peer)-\(next[peer])"
            next[peer] += 1
            let document: Value = .object([
                "_id": .string(id), "peer": .int(Int64(peer)), "value": .int(Int64.random(in: 0..<1000, using: &random)),
                "site": .object(["zone": .string("z\(peer % 4)"), "shelf": .int(Int64(next[peer] % 16))]),
            ])
            _ = try store.execute("INSERT INTO readings DOCUMENTS (:doc)", arguments: ["doc": document])
            live[peer].append(id)
            liveIDs.insert(id)
        }
    }
}

import ArcusAgent
import ArcusCodec
import ArcusCRDT
import Foundation

/// What a trace replay needs of a replica, whether it keeps its documents in memory
/// (`TraceReplica`) or in a durable store (`StoreReplica`).
protocol ReplayReplica: AnyObject {
    /// Everything this replica has seen, per site: what it sends as its summary.
    var version: VersionVector { get }
    /// Applies one local write through the CRDT's delta-mutators.
    func apply(_ key: DocumentKey, _ mutation: (inout DocumentState, Stamp) -> DocumentState?) throws
    /// What `receiver`, which has seen `known`, lacks: one complete batch, and the position to
    /// acknowledge once it is merged.
    func changes(since known: VersionVector, for receiver: Self) throws -> (batch: DeltaBatch, position: Int64)
    func acknowledge(_ position: Int64, by receiver: Self)
    /// Joins a batch received from another replica.
    func receive(_ batch: DeltaBatch) throws
    /// Every document's whole state: what a fresh peer needs.
    func snapshot() throws -> DeltaBatch
}

extension TraceReplica: ReplayReplica {
    func changes(since known: VersionVector, for receiver: TraceReplica) -> (batch: DeltaBatch, position: Int64) {
        (changes(since: known), 0)
    }

    func acknowledge(_ position: Int64, by receiver: TraceReplica) {}
}

extension StoreReplica: ReplayReplica {}

extension DeltaBatch {
    /// The live documents as `{collection: {id: fields}}`, the shape the anchor runners print.
    func stateJSON(collections: [String]) -> Value {
        var byCollection: [String: [String: Value]] = [:]
        for name in collections { byCollection[name] = [:] }
        for document in documents {
            guard let value = document.state.value else { continue }
            byCollection[document.key.collection, default: [:]][document.key.idText] = value
        }
        return .object(byCollection.mapValues { .object($0) })
    }
}

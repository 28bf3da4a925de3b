import ArcusAgent
import ArcusCodec
import ArcusCRDT
import ArcusStore
import Foundation

/// One replica of a trace replay kept in a durable store (SQLite, WAL) in its own data
/// directory: each local write is a transaction, each sync reads the sender's change log from
/// where the last sync to that receiver ended and merges the batch in one transaction.
final class StoreReplica {
    let store: Store
    /// Per receiver, where this store's change log was last sent up to.
    private var positions: [ObjectIdentifier: Int64] = [:]

    init(directory: URL, options: Store.Options = Store.Options()) throws {
        store = try Store(directory: directory, options: options)
    }

    var version: VersionVector { store.version }

    func apply(_ key: DocumentKey, _ mutation: (inout DocumentState, Stamp) -> DocumentState?) throws {
        try store.write { tx in try tx.apply(key, mutation) }
    }

    /// Everything `receiver` lacks, given that it has seen `known`; one complete batch.
    func changes(since known: VersionVector, for receiver: StoreReplica) throws -> (batch: DeltaBatch, position: Int64) {
        let set = try store.changes(after: positions[ObjectIdentifier(receiver)] ?? 0, since: known, limit: .max)
        return (set.batch, set.position)
    }

    /// Called once `receiver` has merged what `changes` gave it.
    func acknowledge(_ position: Int64, by receiver: StoreReplica) {
        positions[ObjectIdentifier(receiver)] = position
    }

    func receive(_ batch: DeltaBatch) throws { try store.merge(batch) }

    /// Every document's whole state: what a fresh peer needs.
    func snapshot() throws -> DeltaBatch {
        try store.changes(after: 0, since: .empty, limit: .max).batch
    }
}

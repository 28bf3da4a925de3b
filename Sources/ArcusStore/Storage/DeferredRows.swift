import ArcusCRDT
import GRDB
import Synchronization

/// The documents a store in memory has written and not yet put in rows.
///
/// A store in memory has nothing to make durable, so writing each change's row at once — its
/// state encoded, its JSON made for queries — buys nothing until something reads the rows.
/// Half of replaying a trace through sync sessions went to those rows (Docs/SyncCost.md). So
/// a write or merge keeps the document here, committed with its transaction, and the change
/// log, sync's loads and merges answer from here; the rows are written, latest state only,
/// when anything else reads the `document` table (a query, a count, an eviction), or when
/// more than `limit` changes wait (so memory holds encoded rows, not decoded states, for most
/// of a large store).
///
/// Touched only on the store's one connection (a `DatabaseQueue`, which runs one access at a
/// time): the lock makes it `Sendable`, and is never contended.
final class DeferredRows: Sendable {
    /// One document as its latest write left it.
    struct Document {
        var state: DocumentState
        /// Its position in the change log.
        var sequence: Int64
        /// Whether readers were not to see it when it was written (`Store.withhold`): its row
        /// then gets no JSON, as a row written at once would have.
        var withheld: Bool
    }

    /// One change in the log; only a document's latest keeps its state.
    private struct Change {
        let sequence: Int64
        let key: DocumentKey
        /// Nil once a later change of the document supersedes this one.
        var document: Document?
        /// `estimatedBytes` of its state, counted while the state was at hand: counting it when
        /// the log is read cost a trip to memory for each of the state's arrays, 2% of a replay.
        let estimatedBytes: Int64
    }

    private struct Contents {
        /// Every change, in log order. A document's earlier changes stay, stateless, until the
        /// next `removeAll`: positions are searched here.
        var log: [Change] = []
        /// Where each document's latest change is in the log.
        var latest: [DocumentKey: Int] = [:]

        /// The index of the first change after `position`: the log is in position order.
        func firstIndex(after position: Int64) -> Int {
            var low = 0, high = log.count
            while low < high {
                let middle = (low + high) / 2
                if log[middle].sequence <= position { low = middle + 1 } else { high = middle }
            }
            return low
        }
    }

    private let contents = Mutex(Contents())

    /// How many changes may wait before the rows are written.
    let limit: Int

    /// About 64k documents decoded: a few tens of MB at most for the documents of the shared
    /// traces.
    static let defaultLimit = 1 << 16

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    var isEmpty: Bool { contents.withLock { $0.log.isEmpty } }

    /// How many changes wait (superseded ones included).
    var count: Int { contents.withLock { $0.log.count } }

    func document(_ key: DocumentKey) -> Document? {
        contents.withLock { contents in contents.latest[key].flatMap { contents.log[$0].document } }
    }

    /// Whether `key`'s document waits: its row, if it has one, holds an earlier change.
    func holds(_ key: DocumentKey) -> Bool { contents.withLock { $0.latest[key] != nil } }

    /// The position of the latest change waiting; nil when none does.
    var lastPosition: Int64? { contents.withLock { $0.log.last?.sequence } }

    /// Takes in the documents a transaction wrote, in the order it wrote them, once it commits.
    func commit(_ written: [(key: DocumentKey, document: Document)]) {
        contents.withLock { contents in
            for (key, document) in written {
                if let earlier = contents.latest.updateValue(contents.log.count, forKey: key) { contents.log[earlier].document = nil }
                contents.log.append(Change(sequence: document.sequence, key: key, document: document,
                                           estimatedBytes: Self.estimatedBytes(document.state)))
            }
        }
    }

    /// Every document waiting, with its latest state.
    var all: [(key: DocumentKey, document: Document)] {
        contents.withLock { contents in contents.latest.values.map { (contents.log[$0].key, contents.log[$0].document!) } }
    }

    /// Forgets every document waiting: their rows are written.
    func removeAll() {
        contents.withLock { $0 = Contents() }
    }

    /// The documents whose latest change lies after `position`, in log order, at most `limit`;
    /// and whether more follow.
    func changed(after position: Int64, limit: Int, collection: String?) -> (documents: [LoggedDocument], more: Bool) {
        contents.withLock { contents in
            var documents: [LoggedDocument] = []
            for index in contents.firstIndex(after: position)..<contents.log.count {
                let change = contents.log[index]
                guard let document = change.document, collection == nil || change.key.collection == collection else { continue }
                guard documents.count < limit else { return (documents, true) }
                documents.append(LoggedDocument(key: change.key, state: document.state, sequence: change.sequence, storedBytes: change.estimatedBytes))
            }
            return (documents, false)
        }
    }

    /// How many documents' latest changes lie after `position` and at or before `end`, and
    /// their `estimatedBytes`.
    func backlog(after position: Int64, through end: Int64, collection: String?) -> (documents: Int, bytes: Int64) {
        contents.withLock { contents in
            var documents = 0, bytes: Int64 = 0
            for index in contents.firstIndex(after: position)..<contents.log.count {
                guard contents.log[index].sequence <= end else { break }
                guard contents.log[index].document != nil, collection == nil || contents.log[index].key.collection == collection else { continue }
                documents += 1
                bytes += contents.log[index].estimatedBytes
            }
            return (documents, bytes)
        }
    }
}

extension DeferredRows {
    /// What a waiting document's row will take, about: what its decoded state takes, which
    /// grows with it. Counted for the same documents in `Store.backlog` and in the change log,
    /// it serves a backfill's progress, which scales stored bytes by their cost on the wire.
    static func estimatedBytes(_ state: DocumentState) -> Int64 {
        Int64(DocumentStateCache.memory(of: state, storedBytes: 0))
    }

    /// Writes the rows of `documents` on `db`, inside the caller's transaction, and caches
    /// their states at their positions (so that reading a row back skips decoding it).
    static func write(_ documents: [(key: DocumentKey, document: Document)], _ db: Database, store: Store) throws {
        guard !documents.isEmpty else { return }
        let statement = try RawStatement(db, sql: DocumentRows.storeSQL)
        for (key, document) in documents {
            let json = document.withheld ? nil : document.state.visibleJSON(adding: ("_id", key.id))
            let written = try DocumentRows.store(statement, DocumentRows.RowID(key), state: document.state, json: json, sequence: document.sequence,
                                                 site: store.site, encoder: store.stateEncoder)
            store.stateCache.insert(document.state, of: key, at: document.sequence, storedBytes: written.storedBytes, layout: written.layout,
                                    evicting: false)
        }
    }
}

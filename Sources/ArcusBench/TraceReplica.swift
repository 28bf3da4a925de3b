import ArcusAgent
import ArcusCRDT
import ArcusCodec

/// One replica of a trace replay, in memory: its documents, what it has seen, and a per-site
/// log of which documents each event touched, so "what changed since this version" reads only
/// the tail of the log instead of every document.
final class TraceReplica {
    let site: SiteID
    var clock: HybridLogicalClock
    private(set) var keys: [DocumentKey] = []
    private(set) var states: [DocumentState] = []
    private var index = DocumentIndex()
    /// Document indices in key order, and each document's position in it (rebuilt when stale),
    /// so batches list documents in the order the codec sends them without sorting keys.
    private var ordered: [Int] = []
    private var rank: [Int] = []
    private var rankIsStale = false
    /// Everything this replica has seen, per site.
    private(set) var version = VersionVector()
    /// Per site (a handful, so an array): (event time, document index), in time order.
    private var log: [(site: SiteID, entries: [(time: Timestamp, document: Int)])] = []
    /// Per document, the last `changes(since:)` call that listed it (a generation number), so
    /// listing touched documents needs no set.
    private var listed: [UInt32] = []
    private var generation: UInt32 = 0

    @inline(__always)
    private func logIndex(_ site: SiteID) -> Int {
        for i in log.indices where log[i].site == site { return i }
        log.append((site, []))
        return log.count - 1
    }

    init(site: SiteID, clock: HybridLogicalClock = HybridLogicalClock()) {
        self.site = site
        self.clock = clock
    }

    var documentCount: Int { states.count }

    private func slot(for key: DocumentKey) -> Int {
        if let i = index.find(key, in: keys) { return i }
        let i = states.count
        keys.append(key)
        states.append(DocumentState())
        listed.append(0)
        index.insert(key, document: i, keys: keys)
        var low = 0, high = ordered.count
        while low < high {
            let mid = (low + high) / 2
            if keys[ordered[mid]] < key { low = mid + 1 } else { high = mid }
        }
        ordered.insert(i, at: low)
        rankIsStale = true
        return i
    }

    /// Applies one local write through the CRDT's delta-mutators.
    func apply(_ key: DocumentKey, _ mutation: (inout DocumentState, Stamp) -> DocumentState?) throws {
        let i = slot(for: key)
        let stamp = Stamp(time: try clock.tick(), site: site)
        guard mutation(&states[i], stamp) != nil else { return }
        version.observe(stamp)
        log[logIndex(site)].entries.append((stamp.time, i))
    }

    /// Every document with events that `known` does not cover, as a batch that sends only those.
    func changes(since known: VersionVector) -> DeltaBatch {
        generation &+= 1
        if generation == 0 {
            for i in listed.indices { listed[i] = 0 }
            generation = 1
        }
        if rankIsStale {
            rank = Array(repeating: 0, count: keys.count)
            for (position, document) in ordered.enumerated() { rank[document] = position }
            rankIsStale = false
        }
        // (rank << 32 | document) for each touched document: sorting plain integers sorts by key.
        var touched: [Int] = []
        for s in log.indices {
            var low = 0
            if let seen = known[log[s].site] {
                // Binary search for the first event after what `known` has seen.
                low = log[s].entries.partitionPoint { $0.time <= seen }
            }
            for k in low..<log[s].entries.count {
                let document = log[s].entries[k].document
                if listed[document] != generation {
                    listed[document] = generation
                    touched.append(rank[document] << 32 | document)
                }
            }
        }
        touched.sort()
        var documents: [DocumentDelta] = []
        documents.reserveCapacity(touched.count)
        for entry in touched {
            let document = entry & 0xFFFF_FFFF
            documents.append(DocumentDelta(key: keys[document], state: states[document]))
        }
        return DeltaBatch(documents: documents, covers: version, since: known)
    }

    /// Joins a batch received from another replica.
    func receive(_ batch: DeltaBatch) {
        let known = version
        var touched: [Int] = []
        // Indexing instead of `for delta in`: a bound copy of each delta retains all its tables.
        for k in batch.documents.indices {
            let i = slot(for: batch.documents[k].key)
            // The cells of one delta mostly share a few events: log each (site, time) once.
            var lastSite = -1
            var last = Stamp(time: .zero, site: SiteID(0))
            for cell in batch.documents[k].state.cells where cell.kind != .field && cell.event != last && !known.contains(cell.event) {
                last = cell.event
                if lastSite < 0 || log[lastSite].site != cell.event.site {
                    lastSite = logIndex(cell.event.site)
                    if !touched.contains(lastSite) { touched.append(lastSite) }
                }
                log[lastSite].entries.append((cell.event.time, i))
                version.observe(cell.event)
            }
            states[i].join(batch.documents[k].state)
        }
        // Events of one site arrive after everything already logged for it, so sorting each
        // site's new tail by time keeps its log sorted.
        for site in touched {
            let seen = known[log[site].site]
            let tail = log[site].entries.partitionPoint { entry in seen.map { entry.time <= $0 } ?? false }
            log[site].entries[tail...].sort { $0.time < $1.time }
        }
        if let covers = batch.covers { version.formUnion(covers) }
        // A replay's replicas are the trace's own, with its times: nothing to bound.
        clock.observe(version.maxTime, through: .max)
    }

    /// Every document's full state: what a fresh peer needs.
    func snapshot() -> DeltaBatch {
        DeltaBatch(documents: states.indices.map { DocumentDelta(key: keys[$0], state: states[$0]) }, covers: version)
    }

    /// The live documents as `{collection: {id: fields}}`, the shape the anchor runners print.
    func stateJSON(collections: [String]) -> Value {
        var byCollection: [String: [String: Value]] = [:]
        for name in collections { byCollection[name] = [:] }
        for (i, state) in states.enumerated() {
            guard let value = state.value else { continue }
            byCollection[keys[i].collection, default: [:]][keys[i].idText] = value
        }
        return .object(byCollection.mapValues { .object($0) })
    }

    func state(of key: DocumentKey) -> DocumentState? { index.find(key, in: keys).map { states[$0] } }
}

extension Array {
    /// The first index whose element does not satisfy `belongsBefore`, for an array already
    /// partitioned by it (binary search).
    func partitionPoint(_ belongsBefore: (Element) -> Bool) -> Int {
        var low = 0, high = count
        while low < high {
            let mid = (low + high) / 2
            if belongsBefore(self[mid]) { low = mid + 1 } else { high = mid }
        }
        return low
    }
}

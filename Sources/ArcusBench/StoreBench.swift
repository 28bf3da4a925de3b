import ArcusAgent
import ArcusCRDT
import ArcusStore
import Dispatch
import Foundation
import Synchronization

/// `arcus bench store`: the store against a plain SQLite table of JSON text doing the same work
/// in the same run — upserts in transactions of 100 and of 1, point reads, an equality SELECT
/// without and with an index — and how soon an observer hears of a commit. The two engines take
/// turns chunk by chunk, so a noisy neighbour slows both alike and the ratios hold.
///
/// One-transaction upserts are also timed with durability full (`Store.Options.synchronous =
/// .full`, `PRAGMA synchronous = FULL`: an fsync of the WAL per commit) beside normal, on both
/// engines, in a second pair of databases loaded with the same documents: what an agent's
/// default (`--durability full`) costs per write against what SQLite alone pays for it.
public struct StoreBench {
    public struct Figures: Sendable {
        public var documents = 0
        public var arcusBatchedPerSecond = 0.0, sqliteBatchedPerSecond = 0.0
        public var arcusSinglePerSecond = 0.0, sqliteSinglePerSecond = 0.0
        /// One-transaction upserts with durability full (an fsync per commit), and how many.
        public var arcusSingleFullPerSecond = 0.0, sqliteSingleFullPerSecond = 0.0
        public var singleFullWrites = 0
        public var arcusPointReadMicroseconds = 0.0, sqlitePointReadMicroseconds = 0.0
        public var arcusScanSelectMilliseconds = 0.0, sqliteScanSelectMilliseconds = 0.0
        public var arcusIndexedSelectMilliseconds = 0.0, sqliteIndexedSelectMilliseconds = 0.0
        /// COUNT(*) with an equality on the indexed field, and COUNT(*) per value of a field
        /// with 100 values (no index), each beside the same in SQLite with json_extract.
        public var arcusCountMilliseconds = 0.0, sqliteCountMilliseconds = 0.0
        public var arcusGroupMilliseconds = 0.0, sqliteGroupMilliseconds = 0.0
        public var observerLatencyMilliseconds = 0.0
        public var selectRows = 0

        public var jsonLine: String {
            func r(_ x: Double, _ digits: Int = 3) -> Value {
                var scale = 1.0
                for _ in 0..<digits { scale *= 10 }
                return .double((x * scale).rounded() / scale)
            }
            let fields: [(String, Value)] = [
                ("bench", "store"), ("docs", .int(Int64(documents))),
                ("arcus_batched_per_s", r(arcusBatchedPerSecond, 0)), ("sqlite_batched_per_s", r(sqliteBatchedPerSecond, 0)),
                ("batched_ratio", r(arcusBatchedPerSecond / sqliteBatchedPerSecond)),
                ("arcus_single_per_s", r(arcusSinglePerSecond, 0)), ("sqlite_single_per_s", r(sqliteSinglePerSecond, 0)),
                ("single_ratio", r(arcusSinglePerSecond / sqliteSinglePerSecond)),
                ("single_write_normal_us", r(1e6 / arcusSinglePerSecond, 1)), ("single_write_full_us", r(1e6 / arcusSingleFullPerSecond, 1)),
                ("sqlite_normal_us", r(1e6 / sqliteSinglePerSecond, 1)), ("sqlite_full_us", r(1e6 / sqliteSingleFullPerSecond, 1)),
                // Per write: full against normal on each engine, and Arcus against SQLite with both full.
                ("single_full_over_normal", r(arcusSinglePerSecond / arcusSingleFullPerSecond)),
                ("sqlite_full_over_normal", r(sqliteSinglePerSecond / sqliteSingleFullPerSecond)),
                ("single_full_ratio", r(arcusSingleFullPerSecond / sqliteSingleFullPerSecond)),
                ("single_full_writes", .int(Int64(singleFullWrites))),
                ("arcus_point_read_us", r(arcusPointReadMicroseconds, 1)), ("sqlite_point_read_us", r(sqlitePointReadMicroseconds, 1)),
                ("arcus_scan_select_ms", r(arcusScanSelectMilliseconds)), ("sqlite_scan_select_ms", r(sqliteScanSelectMilliseconds)),
                ("arcus_indexed_select_ms", r(arcusIndexedSelectMilliseconds)), ("sqlite_indexed_select_ms", r(sqliteIndexedSelectMilliseconds)),
                ("indexed_select_ratio", r(arcusIndexedSelectMilliseconds / sqliteIndexedSelectMilliseconds)),
                ("select_rows", .int(Int64(selectRows))),
                ("arcus_count_ms", r(arcusCountMilliseconds)), ("sqlite_count_ms", r(sqliteCountMilliseconds)),
                ("count_ratio", r(arcusCountMilliseconds / sqliteCountMilliseconds)),
                ("arcus_group_ms", r(arcusGroupMilliseconds)), ("sqlite_group_ms", r(sqliteGroupMilliseconds)),
                ("group_ratio", r(arcusGroupMilliseconds / sqliteGroupMilliseconds)), ("observer_latency_ms", r(observerLatencyMilliseconds)),
            ]
            return FigureLine.json(fields)
        }
    }

    public let documentCount: Int
    /// Where both databases live; removed afterwards.
    public let scratch: URL

    public init(documents: Int, scratch: URL) {
        documentCount = documents
        self.scratch = scratch
    }

    /// `progress` hears the phase and the share of it done (0…1).
    public func run(progress: ((String, Double) -> Void)? = nil) throws -> Figures {
        guard documentCount >= 1000 else { throw BenchError("--docs must be at least 1000, so that each phase has work to time") }
        let fileManager = FileManager.default
        try fileManager.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? fileManager.removeItem(at: scratch) }
        let store = try Store(directory: scratch.appendingPathComponent("arcus"))
        let plain = try PlainJSONTable(path: scratch.appendingPathComponent("plain.sqlite").path)
        var fullOptions = Store.Options()
        fullOptions.synchronous = .full
        let fullStore = try Store(directory: scratch.appendingPathComponent("arcus-full"), options: fullOptions)
        let fullPlain = try PlainJSONTable(path: scratch.appendingPathComponent("plain-full.sqlite").path, synchronous: .full)

        var generator = FleetDocuments(seed: 1)
        let singles = max(documentCount / 10, 100)
        // An fsync each takes milliseconds on some disks: fewer, enough for a steady figure.
        let fullSingles = min(singles, 2_000)
        // Each with one of 100 gates, for the GROUP BY below.
        let documents = (0..<(documentCount + singles)).map { n in
            var document = generator.document(n)
            document["gate"] = .string(Self.gate(n))
            return document
        }
        var figures = Figures()
        figures.documents = documentCount
        let chunks = 10

        // Upserts in transactions of 100, taking turns by tenths.
        var arcusTime = 0.0, plainTime = 0.0
        for chunk in 0..<chunks {
            let range = (documentCount * chunk / chunks)..<(documentCount * (chunk + 1) / chunks)
            arcusTime += try timed {
                for start in stride(from: range.lowerBound, to: range.upperBound, by: 100) {
                    let batch = documents[start..<min(start + 100, range.upperBound)]
                    _ = try store.write { tx in
                        for document in batch { _ = try tx.upsert(document, into: "orders") }
                    }
                }
            }
            plainTime += try timed {
                for start in stride(from: range.lowerBound, to: range.upperBound, by: 100) {
                    try plain.upsert(documents[start..<min(start + 100, range.upperBound)])
                }
            }
            // The same documents into the full pair, untimed, so that their one-transaction
            // upserts below go into tables of the same size.
            for start in stride(from: range.lowerBound, to: range.upperBound, by: 100) {
                let batch = documents[start..<min(start + 100, range.upperBound)]
                _ = try fullStore.write { tx in
                    for document in batch { _ = try tx.upsert(document, into: "orders") }
                }
                try fullPlain.upsert(batch)
            }
            progress?("upserts in transactions of 100", Double(chunk + 1) / Double(chunks))
        }
        figures.arcusBatchedPerSecond = Double(documentCount) / arcusTime
        figures.sqliteBatchedPerSecond = Double(documentCount) / plainTime

        // Upserts one transaction each: new documents after the first N, per second on each engine.
        func singleWrites(_ store: Store, _ plain: PlainJSONTable, count: Int, phase: String) throws -> (arcus: Double, plain: Double) {
            var arcusTime = 0.0, plainTime = 0.0
            for chunk in 0..<chunks {
                let range = (documentCount + count * chunk / chunks)..<(documentCount + count * (chunk + 1) / chunks)
                arcusTime += try timed {
                    for n in range { _ = try store.write { tx in _ = try tx.upsert(documents[n], into: "orders") } }
                }
                plainTime += try timed {
                    for n in range { try plain.upsert(documents[n...n]) }
                }
                progress?(phase, Double(chunk + 1) / Double(chunks))
            }
            return (Double(count) / arcusTime, Double(count) / plainTime)
        }
        (figures.arcusSinglePerSecond, figures.sqliteSinglePerSecond) = try singleWrites(store, plain, count: singles, phase: "upserts one transaction each")
        // The same with durability full: the first `fullSingles` of those documents.
        (figures.arcusSingleFullPerSecond, figures.sqliteSingleFullPerSecond) = try singleWrites(
            fullStore, fullPlain, count: fullSingles, phase: "upserts one transaction each, durability full"
        )
        figures.singleFullWrites = fullSingles

        // Point reads of random documents.
        var random = SplitMix64(seed: 2)
        let total = documentCount + singles
        let reads = (0..<min(20_000, total)).map { _ in FleetDocuments.id(Int.random(in: 0..<total, using: &random)) }
        let orders = store.collection("orders")
        arcusTime = 0; plainTime = 0
        for chunk in 0..<chunks {
            let slice = reads[(reads.count * chunk / chunks)..<(reads.count * (chunk + 1) / chunks)]
            arcusTime += try timed {
                for id in slice where try orders.findByID(.string(id)).exec() == nil { throw BenchError("document \(id) missing from the store") }
            }
            plainTime += try timed {
                for id in slice where try plain.document(id: id) == nil { throw BenchError("document \(id) missing from the plain table") }
            }
            progress?("point reads", Double(chunk + 1) / Double(chunks))
        }
        figures.arcusPointReadMicroseconds = arcusTime / Double(reads.count) * 1e6
        figures.sqlitePointReadMicroseconds = plainTime / Double(reads.count) * 1e6

        // Equality SELECT, first scanning, then through an index on the field.
        let query = "SELECT * FROM orders WHERE flightNo = :flight"
        func compareSelects(_ count: Int, phase: String) throws -> (arcus: Double, plain: Double, rows: Int) {
            var arcus = 0.0, sqlite = 0.0, rows = 0
            for i in 0..<count {
                let flight = FleetDocuments.flight(i * 7919)
                var arcusRows = 0, plainRows = 0
                arcus += try timed { arcusRows = try store.execute(query, arguments: ["flight": .string(flight)]).items.count }
                sqlite += try timed { plainRows = try plain.documents(where: "flightNo", equals: flight).count }
                guard arcusRows == plainRows else { throw BenchError("\(phase): Arcus found \(arcusRows) documents, SQLite \(plainRows)") }
                rows = arcusRows
                progress?(phase, Double(i + 1) / Double(count))
            }
            return (arcus / Double(count) * 1e3, sqlite / Double(count) * 1e3, rows)
        }
        let scans = try compareSelects(5, phase: "equality SELECT without an index")
        figures.arcusScanSelectMilliseconds = scans.arcus
        figures.sqliteScanSelectMilliseconds = scans.plain
        _ = try store.execute("CREATE INDEX orders_flight ON orders (flightNo)")
        try plain.createIndex(on: "flightNo")
        let indexed = try compareSelects(200, phase: "equality SELECT with an index")
        figures.arcusIndexedSelectMilliseconds = indexed.arcus
        figures.sqliteIndexedSelectMilliseconds = indexed.plain
        figures.selectRows = indexed.rows
        try compareAggregates(store, plain, into: &figures, progress: progress)

        figures.observerLatencyMilliseconds = try observerLatency(store, documents: documents, progress: progress)
        return figures
    }

    static func gate(_ n: Int) -> String { "G\((n * 31) % 100)" }

    /// `SELECT COUNT(*) … WHERE flightNo = ?` through the index on flightNo, and `SELECT gate,
    /// COUNT(*) … GROUP BY gate` over every document, on both engines in turns; each answer is
    /// checked against the other engine's.
    private func compareAggregates(_ store: Store, _ plain: PlainJSONTable, into figures: inout Figures,
                                   progress: ((String, Double) -> Void)?) throws {
        let counts = 200, groupings = 10
        var arcus = 0.0, sqlite = 0.0
        for i in 0..<counts {
            let flight = FleetDocuments.flight(i * 7919)
            var arcusCount: Value?, plainCount = 0
            arcus += try timed {
                arcusCount = try store.execute("SELECT COUNT(*) AS n FROM orders WHERE flightNo = :flight", arguments: ["flight": .string(flight)])
                    .items.first?[path: ["n"]]
            }
            sqlite += try timed { plainCount = try plain.count(where: "flightNo", equals: flight) }
            guard arcusCount == .int(Int64(plainCount)) else { throw BenchError("COUNT: Arcus counted \(arcusCount ?? .null), SQLite \(plainCount)") }
            progress?("COUNT with an indexed equality", Double(i + 1) / Double(counts))
        }
        figures.arcusCountMilliseconds = arcus / Double(counts) * 1e3
        figures.sqliteCountMilliseconds = sqlite / Double(counts) * 1e3
        arcus = 0
        sqlite = 0
        for i in 0..<groupings {
            var arcusGroups: [Value] = [], plainGroups: [(value: String?, count: Int)] = []
            arcus += try timed { arcusGroups = try store.execute("SELECT gate, COUNT(*) AS n FROM orders GROUP BY gate").items }
            sqlite += try timed { plainGroups = try plain.countPerValue(of: "gate") }
            let expected = plainGroups.map { Value.object(["gate": $0.value.map(Value.string) ?? .null, "n": .int(Int64($0.count))]) }
            guard arcusGroups.count == 100, arcusGroups == expected else {
                throw BenchError("GROUP BY: Arcus made \(arcusGroups.count) groups, SQLite \(plainGroups.count), or their counts differ")
            }
            progress?("GROUP BY a field with 100 values", Double(i + 1) / Double(groupings))
        }
        figures.arcusGroupMilliseconds = arcus / Double(groupings) * 1e3
        figures.sqliteGroupMilliseconds = sqlite / Double(groupings) * 1e3
    }

    /// The median time from starting a one-document write to its observer's event, commit
    /// included, for an indexed equality observer over the whole collection.
    private func observerLatency(_ store: Store, documents: [[String: Value]], progress: ((String, Double) -> Void)?) throws -> Double {
        let delivered = DispatchSemaphore(value: 0)
        let deliveredAt = Mutex(0.0)
        let flight = FleetDocuments.flight(7)
        let observer = try store.registerObserver("SELECT * FROM orders WHERE flightNo = :flight", arguments: ["flight": .string(flight)]) { _ in
            deliveredAt.withLock { $0 = monotonicSeconds() }
            delivered.signal()
        }
        defer { observer.cancel() }
        delivered.wait()  // the first result
        let rounds = 200
        var latencies: [Double] = []
        for round in 0..<rounds {
            let n = 7 + (round % (documentCount / FleetDocuments.flights)) * FleetDocuments.flights
            let started = monotonicSeconds()
            _ = try store.write { tx in
                _ = try tx.upsert(["_id": documents[n]["_id"]!, "status": .string("round \(round)")], into: "orders")
            }
            guard delivered.wait(timeout: .now() + 10) == .success else { throw BenchError("the observer heard nothing of a commit within 10 s") }
            latencies.append(deliveredAt.withLock { $0 } - started)
            progress?("observer latency", Double(round + 1) / Double(rounds))
        }
        latencies.sort()
        return latencies[latencies.count / 2] * 1e3
    }

    private func timed(_ body: () throws -> Void) throws -> Double {
        let start = monotonicSeconds()
        try body()
        return monotonicSeconds() - start
    }
}

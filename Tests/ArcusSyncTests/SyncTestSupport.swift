import ArcusCRDT
import ArcusCodec
import ArcusStore
import ArcusSync
import Foundation
import Synchronization
import Testing

/// The `_id`s of the live documents of `collection`, in order.
func ids(_ store: Store, _ collection: String) throws -> [String] {
    try store.execute("SELECT * FROM \(collection) ORDER BY _id").items.compactMap { $0[path: ["_id"]]?.stringValue }
}

/// Every live document of `collection` as JSON text, in `_id` order: two stores hold the same
/// documents when these are equal.
func contents(_ store: Store, _ collection: String) throws -> [String] {
    try store.execute("SELECT * FROM \(collection) ORDER BY _id").items.map(\.jsonString)
}

/// Lines an engine logged, for tests that check what it reported.
final class LogLines: Sendable {
    private let lines = Mutex<[(SyncLogLevel, String)]>([])

    var sink: @Sendable (SyncLogLevel, String) -> Void { { level, line in self.lines.withLock { $0.append((level, line)) } } }

    var all: [(SyncLogLevel, String)] { lines.withLock { $0 } }

    func contains(_ level: SyncLogLevel, _ text: String) -> Bool {
        all.contains { $0.0 == level && $0.1.contains(text) }
    }
}

/// A store with its sync engine, for tests. Lazy push is off unless `lazyPushHold` is given
/// (LazyPushTests): most tests count messages or deliveries between two peers, where it never
/// acts; the agent, the demo and the network bed run the engine's default (on).
struct Peer {
    let store: Store
    let engine: SyncEngine
    let log: LogLines

    init(_ name: String, store: Store? = nil, batchSize: Int = 200, clock: HybridLogicalClock.PhysicalClock? = nil,
         relayedAttachmentBytes: Int64? = nil, lazyPushHold: Duration? = nil, conflictsPerField: Int = Store.defaultConflictsPerField) throws {
        var storeOptions = Store.Options()
        storeOptions.conflictsPerField = conflictsPerField
        if let clock { storeOptions.physicalClock = clock }
        self.store = try store ?? Store(inMemory: storeOptions)
        log = LogLines()
        var options = SyncEngine.Options()
        options.name = name
        options.batchSize = batchSize
        options.log = log.sink
        if let relayedAttachmentBytes { options.relayedAttachmentBytes = relayedAttachmentBytes }
        options.lazyPushHold = lazyPushHold
        engine = try SyncEngine(store: self.store, options: options)
    }

    func subscribe(_ query: String) throws -> SyncSubscription { try engine.registerSubscription(query) }
}

/// Two engines' sessions over one channel pair.
struct Connection {
    let left: SyncSession, right: SyncSession
    let leftChannel: TestChannel, rightChannel: TestChannel

    func caughtUp() async -> Bool {
        let a = await left.waitUntilCaughtUp()
        let b = await right.waitUntilCaughtUp()
        return a && b
    }

    func close() { leftChannel.close() }

    func ended() async {
        await left.waitUntilEnded()
        await right.waitUntilEnded()
    }
}

/// `permissions.0` is what `a` lets `b` do, `permissions.1` what `b` lets `a` do.
func connect(_ a: Peer, _ b: Peer, preferredFrameSize: Int = 4096, pulling: (Bool, Bool) = (true, true),
             permissions: (SyncPermissions, SyncPermissions) = (.all, .all)) -> Connection {
    let (ca, cb) = TestChannel.pair(preferredFrameSize: preferredFrameSize)
    let sa = a.engine.connect(ca, pulling: pulling.0, permissions: permissions.0)
    let sb = b.engine.connect(cb, pulling: pulling.1, permissions: permissions.1)
    return Connection(left: sa, right: sb, leftChannel: ca, rightChannel: cb)
}

/// A directory under the system's temporary directory, removed by `remove()`.
struct TemporaryDirectory {
    let url: URL

    init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-sync-test-\(UUID().uuidString)")
    }

    func remove() { try? FileManager.default.removeItem(at: url) }
}

extension Store {
    /// Inserts `count` orders `o000`… with the given status.
    func insertOrders(_ range: Range<Int>, status: String = "OPEN", collection: String = "orders") throws {
        try write { tx in
            for i in range {
                try tx.upsert(["_id": .string(String(format: "o%04d", i)), "status": .string(status), "n": .int(Int64(i))], into: collection)
            }
        }
    }
}

/// What one side of a connection sent in delta batches: every document key, in order.
func keysSent(_ channel: TestChannel) throws -> [DocumentKey] {
    try channel.sentMessages().flatMap { message -> [DocumentKey] in
        if case .deltaBatch(let batch) = message { return batch.documents.map(\.key) }
        return []
    }
}

/// Keys that appear more than once in `keys`.
func repeated(_ keys: [DocumentKey]) -> [DocumentKey] {
    var seen = Set<DocumentKey>(), twice = Set<DocumentKey>()
    for key in keys where !seen.insert(key).inserted { twice.insert(key) }
    return twice.sorted()
}

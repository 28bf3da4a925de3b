import ArcusTestSupport
import Foundation
import Testing
@testable import ArcusStore

/// The delta log's promises: what was appended is read back after reopening, in order; a torn
/// or damaged tail (a crash or power cut in the middle of an append) is cut off at open, and
/// nothing before it is lost; a file that is not a delta log is refused and left alone.
@Suite("Delta log")
struct DeltaLogTests {
    private static func scratch() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("arcus-deltalog-\(UUID().uuidString)")
    }

    private static func payload(_ n: Int, size: Int) -> [UInt8] {
        (0..<size).map { UInt8(truncatingIfNeeded: n &* 31 &+ $0) }
    }

    private static func fileSize(_ url: URL) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int)
    }

    @Test("records appended are read back after reopening, in order, from any position")
    func appendAndReopen() throws {
        let url = Self.scratch()
        defer { try? FileManager.default.removeItem(at: url) }
        let written = (1...20).map { DeltaLog.Record(position: Int64($0 * 3), payload: Self.payload($0, size: $0 * 17)) }
        do {
            let log = try DeltaLog(url: url)
            #expect(log.lastPosition == nil)
            for record in written { try log.append(position: record.position, payload: record.payload, sync: record.position % 2 == 0) }
            log.close()
        }
        let log = try DeltaLog(url: url)
        defer { log.close() }
        #expect(log.bytesCutAtOpen == 0)
        #expect(log.lastPosition == 60)
        #expect(try log.records(after: 0).records == written)
        #expect(try log.records(after: 30).records == Array(written.dropFirst(10)))
        #expect(try log.records(after: 60).records.isEmpty)
        // Pages of at most `limit` payload bytes, at least one record each.
        let page = try log.records(after: 0, limit: 100)
        #expect(page.more && page.records == Array(written.prefix(2)))
        #expect(try log.records(after: 0, limit: 1).records.count == 1)
    }

    @Test("a last record cut at any byte is cut off at open; the records before it stay, and appending goes on after them")
    func tornTailAtEveryByte() throws {
        let url = Self.scratch()
        defer { try? FileManager.default.removeItem(at: url) }
        var whole = 0, full = 0
        do {
            let log = try DeltaLog(url: url)
            for n in 1...3 { try log.append(position: Int64(n), payload: Self.payload(n, size: 40), sync: false) }
            whole = try Self.fileSize(url)
            try log.append(position: 4, payload: Self.payload(4, size: 40), sync: false)
            full = try Self.fileSize(url)
            log.close()
        }
        let bytes = try [UInt8](Data(contentsOf: url))
        for cut in whole..<full {
            try Data(bytes.prefix(cut)).write(to: url)
            let log = try DeltaLog(url: url)
            #expect(log.bytesCutAtOpen == cut - whole, "cut at \(cut)")
            #expect(log.lastPosition == 3, "cut at \(cut)")
            #expect(try Self.fileSize(url) == whole, "cut at \(cut)")
            try log.append(position: 5, payload: [9], sync: false)
            #expect(try log.records(after: 0).records.map(\.position) == [1, 2, 3, 5], "cut at \(cut)")
            log.close()
        }
    }

    @Test("a damaged byte anywhere in a record, a length past the limit or a position that does not grow ends the log there")
    func damagedRecords() throws {
        let url = Self.scratch()
        defer { try? FileManager.default.removeItem(at: url) }
        var ends: [Int] = []
        do {
            let log = try DeltaLog(url: url)
            ends.append(try Self.fileSize(url))
            for n in 1...4 {
                try log.append(position: Int64(n * 10), payload: Self.payload(n, size: 12), sync: false)
                ends.append(try Self.fileSize(url))
            }
            log.close()
        }
        let original = try [UInt8](Data(contentsOf: url))
        // Every byte of the third record, flipped: the log keeps the first two.
        for offset in ends[2]..<ends[3] {
            var damaged = original
            damaged[offset] ^= 0x40
            try Data(damaged).write(to: url)
            let log = try DeltaLog(url: url)
            #expect(try log.records(after: 0).records.map(\.position) == [10, 20], "byte \(offset) flipped")
            #expect(log.bytesCutAtOpen == original.count - ends[2])
            log.close()
        }
        // A length of 4 GiB: refused before anything is allocated for it.
        var huge = original
        huge.replaceSubrange(ends[1]..<(ends[1] + 4), with: [0xFF, 0xFF, 0xFF, 0xFF])
        try Data(huge).write(to: url)
        do {
            let log = try DeltaLog(url: url)
            #expect(log.lastPosition == 10)
            log.close()
        }
        // The fourth record's position made 5, below the third's: checksummed, but out of order.
        var backwards = Array(original.prefix(ends[3]))
        do {
            let other = Self.scratch()
            defer { try? FileManager.default.removeItem(at: other) }
            let log = try DeltaLog(url: other)
            try log.append(position: 5, payload: Self.payload(4, size: 12), sync: false)
            log.close()
            backwards += try [UInt8](Data(contentsOf: other)).dropFirst(DeltaLog.magic.count)
        }
        try Data(backwards).write(to: url)
        let log = try DeltaLog(url: url)
        defer { log.close() }
        #expect(try log.records(after: 0).records.map(\.position) == [10, 20, 30])
    }

    @Test("a file that is not a delta log is refused with what to do, and left as it was")
    func foreignFile() throws {
        let url = Self.scratch()
        defer { try? FileManager.default.removeItem(at: url) }
        let foreign = Array("SQLite format 3\u{0}and more".utf8)
        try Data(foreign).write(to: url)
        #expect {
            _ = try DeltaLog(url: url)
        } throws: { error in
            guard case StoreError.cannotOpen(_, let reason) = error else { return false }
            return reason.contains("not an Arcus delta log") && reason.contains("move it out")
        }
        #expect(try [UInt8](Data(contentsOf: url)) == foreign)
    }

    @Test("a header cut short, or an empty file, starts an empty log")
    func shortHeader() throws {
        let url = Self.scratch()
        defer { try? FileManager.default.removeItem(at: url) }
        for length in 0..<DeltaLog.magic.count {
            try Data(DeltaLog.magic.prefix(length)).write(to: url)
            let log = try DeltaLog(url: url)
            #expect(log.lastPosition == nil)
            try log.append(position: 1, payload: [1, 2, 3], sync: true)
            log.close()
            let reopened = try DeltaLog(url: url)
            #expect(try reopened.records(after: 0).records == [DeltaLog.Record(position: 1, payload: [1, 2, 3])], "header of \(length) bytes")
            reopened.close()
        }
    }

    @Test("emptied once its records are in the rows, the log keeps its positions going")
    func removeAll() throws {
        let url = Self.scratch()
        defer { try? FileManager.default.removeItem(at: url) }
        let log = try DeltaLog(url: url)
        for n in 1...5 { try log.append(position: Int64(n), payload: [UInt8(n)], sync: false) }
        try log.removeAll(sync: true)
        #expect(try log.records(after: 0).records.isEmpty)
        #expect(try Self.fileSize(url) == DeltaLog.magic.count)
        try log.append(position: 6, payload: [6], sync: false)
        log.close()
        #expect(throws: StoreError.self) { try log.append(position: 7, payload: [7], sync: false) }
        let reopened = try DeltaLog(url: url)
        defer { reopened.close() }
        #expect(try reopened.records(after: 0).records == [DeltaLog.Record(position: 6, payload: [6])])
    }

    @Test("random records and a random crash point: reopening gives back exactly the whole records before it",
          arguments: SeededRandom.seeds(count: 6, test: "delta-log"))
    func randomCrash(seed: UInt64) throws {
        print("delta-log seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        let url = Self.scratch()
        defer { try? FileManager.default.removeItem(at: url) }
        var appended: [(record: DeltaLog.Record, end: Int)] = []
        do {
            let log = try DeltaLog(url: url)
            var position: Int64 = 0
            for n in 0..<Int.random(in: 1...60, using: &rng) {
                position += Int64.random(in: 1...1000, using: &rng)
                let record = DeltaLog.Record(position: position, payload: Self.payload(n, size: Int.random(in: 0...600, using: &rng)))
                try log.append(position: record.position, payload: record.payload, sync: false)
                appended.append((record, try Self.fileSize(url)))
            }
            log.close()
        }
        var bytes = try [UInt8](Data(contentsOf: url))
        let cut = Int.random(in: DeltaLog.magic.count...bytes.count, using: &rng)
        bytes.removeLast(bytes.count - cut)
        // What a power cut leaves past the last write that reached the disk: garbage, sometimes.
        if Bool.random(using: &rng) { bytes += (0..<Int.random(in: 1...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) } }
        try Data(bytes).write(to: url)
        let kept = appended.filter { $0.end <= cut }.map(\.record)
        let log = try DeltaLog(url: url)
        defer { log.close() }
        #expect(try log.records(after: 0).records == kept, "seed \(seed): cut at \(cut) of \(appended.last?.end ?? 0)")
        #expect(log.lastPosition == kept.last?.position, "seed \(seed)")
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ArcusCodec
import Foundation
import Synchronization

/// An append-only file of records, each a committed transaction's payload at a change-log
/// position: step 1 of the store on disk's plan (Docs/SyncCost.md, "The store on disk: a plan").
/// A store will append each commit's deltas here with one `write` (and `fdatasync` under
/// `durability = full`) instead of committing a SQLite transaction per write, write its rows
/// behind in large batches, and replay the records past the last batch at open. Not yet on the
/// store's path: this type is the file and its promises.
///
/// The file is a header (`magic`, 8 bytes) and records:
///
///     length   UInt32, little-endian: the bytes of position and payload (at most `maximumRecordBytes`)
///     crc      UInt32, little-endian: CRC-32C of those bytes
///     position Int64, little-endian: above every earlier record's
///     payload  length - 8 bytes
///
/// A crash or power cut can leave the last record torn (or, without `fdatasync`, garbage where
/// it was). Opening reads the records in order and cuts the file at the first that is short, too
/// long, fails its checksum or does not move the position on, as SQLite stops at a WAL frame whose
/// checksum fails: what follows was never acknowledged as durable. A length is checked against
/// `maximumRecordBytes` before anything is allocated for it.
final class DeltaLog: Sendable {
    /// One record: a position in the change log, and what was committed there.
    struct Record: Equatable, Sendable {
        let position: Int64
        let payload: [UInt8]
    }

    /// The file's first bytes: its name and format version.
    static let magic: [UInt8] = Array("ARCUSDL".utf8) + [1]
    /// The largest record (position and payload), bytes: far above any transaction a store
    /// commits, small enough that a damaged length never asks for more memory than a device has.
    static let maximumRecordBytes = 64 << 20
    private static let recordHeaderBytes = 8

    let path: String
    private let state: Mutex<State>

    private struct State {
        var descriptor: CInt
        /// Where the next record goes: the file's end.
        var end: Int
        var lastPosition: Int64?
        var isClosed = false
    }

    /// How many bytes of a torn or damaged tail opening cut off (0 when the file was whole).
    let bytesCutAtOpen: Int

    /// Opens the log at `url`, creating it (private to the user, like the store's other files)
    /// when there is none. Throws `StoreError.cannotOpen` for a file that is not a delta log,
    /// leaving it as it was.
    init(url: URL) throws {
        path = url.path
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, PrivateFiles.fileMode)
        guard descriptor >= 0 else { throw PrivateFiles.failure("opening the delta log", path) }
        do {
            let scan = try Self.scan(descriptor, path: path)
            if scan.validEnd < scan.fileSize {
                guard ftruncate(descriptor, off_t(scan.validEnd)) == 0 else { throw PrivateFiles.failure("cutting the torn tail of", path) }
            }
            if scan.validEnd == 0 {
                try Self.write(Self.magic, at: 0, descriptor, path: path)
            }
            bytesCutAtOpen = scan.fileSize - scan.validEnd
            state = Mutex(State(descriptor: descriptor, end: max(scan.validEnd, Self.magic.count), lastPosition: scan.lastPosition))
        } catch {
            closeDescriptor(descriptor)
            throw error
        }
    }

    deinit {
        state.withLock { state in
            if !state.isClosed { closeDescriptor(state.descriptor) }
        }
    }

    /// The position of the last record; nil when there is none.
    var lastPosition: Int64? { state.withLock { $0.lastPosition } }

    /// Appends one record with a single `write`; with `sync`, returns only once `fdatasync` says
    /// it is on the disk. `position` must be above every earlier record's.
    func append(position: Int64, payload: [UInt8], sync: Bool) throws {
        let body = Self.recordHeaderBytes + payload.count
        guard body <= Self.maximumRecordBytes else {
            throw StoreError.invalidDocument("a transaction of \(body) bytes is over the delta log's limit of \(Self.maximumRecordBytes) bytes: write it in smaller transactions")
        }
        var record = [UInt8]()
        record.reserveCapacity(8 + body)
        Self.append(UInt32(body), to: &record)
        Self.append(UInt32(0), to: &record)
        Self.append(UInt64(bitPattern: position), to: &record)
        record += payload
        let crc = CRC32C.checksum(record[8...])
        withUnsafeBytes(of: crc.littleEndian) { record.replaceSubrange(4..<8, with: $0) }
        try state.withLock { state in
            guard !state.isClosed else { throw StoreError.closed }
            if let last = state.lastPosition, position <= last {
                preconditionFailure("delta log positions only grow: \(position) after \(last)")
            }
            do {
                try Self.write(record, at: state.end, state.descriptor, path: path)
            } catch {
                // Part of the record may be in the file: cut it, so the next one follows whole ones.
                _ = ftruncate(state.descriptor, off_t(state.end))
                throw error
            }
            if sync, fdatasync(state.descriptor) != 0 { throw PrivateFiles.failure("syncing", path) }
            state.end += record.count
            state.lastPosition = position
        }
    }

    /// The records after `position`, in order, up to `limit` bytes of payload (at least one record
    /// when any follows), and whether more follow.
    func records(after position: Int64, limit: Int = 8 << 20) throws -> (records: [Record], more: Bool) {
        try state.withLock { state in
            guard !state.isClosed else { throw StoreError.closed }
            var records: [Record] = [], bytes = 0, offset = Self.magic.count
            while offset < state.end {
                // Records at or before `position` are passed by their heads alone: opening
                // checked every record already, and this log wrote each one since.
                let head = try Self.read(16, at: offset, state.descriptor, path: path)
                guard head.count == 16 else { throw PrivateFiles.failure("reading (cut short)", path) }
                guard Int64(bitPattern: Self.integer(UInt64.self, head, at: 8)) > position else {
                    offset += 8 + Int(Self.integer(UInt32.self, head, at: 0))
                    continue
                }
                let (record, size) = try Self.readRecord(at: offset, state.descriptor, end: state.end, path: path)
                offset += size
                if !records.isEmpty, bytes + record.payload.count > limit { return (records, true) }
                records.append(record)
                bytes += record.payload.count
            }
            return (records, false)
        }
    }

    /// Empties the log (its records are in the rows now); positions go on from the last.
    func removeAll(sync: Bool) throws {
        try state.withLock { state in
            guard !state.isClosed else { throw StoreError.closed }
            guard ftruncate(state.descriptor, off_t(Self.magic.count)) == 0 else { throw PrivateFiles.failure("emptying", path) }
            if sync, fdatasync(state.descriptor) != 0 { throw PrivateFiles.failure("syncing", path) }
            state.end = Self.magic.count
        }
    }

    func close() {
        state.withLock { state in
            guard !state.isClosed else { return }
            state.isClosed = true
            closeDescriptor(state.descriptor)
        }
    }

    // MARK: - The file

    private struct Scan {
        var fileSize: Int
        /// Where the whole records end (0: the file has no header yet).
        var validEnd: Int
        var lastPosition: Int64?
    }

    /// Reads the header and every whole record, stopping at the first that is not.
    private static func scan(_ descriptor: CInt, path: String) throws -> Scan {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw PrivateFiles.failure("reading the size of", path) }
        let size = Int(status.st_size)
        guard size > 0 else { return Scan(fileSize: 0, validEnd: 0) }
        let header = try read(min(size, magic.count), at: 0, descriptor, path: path)
        if header != Array(magic.prefix(header.count)) {
            throw StoreError.cannotOpen(path: path, reason: "it is not an Arcus delta log (it begins \(header.map { String(format: "%02x", $0) }.joined())); move it out of the data directory")
        }
        // A header cut short: nothing was ever appended after it.
        guard header.count == magic.count else { return Scan(fileSize: size, validEnd: 0) }
        var scan = Scan(fileSize: size, validEnd: magic.count)
        while scan.validEnd < size {
            guard let (record, length) = try? readRecord(at: scan.validEnd, descriptor, end: size, path: path),
                  scan.lastPosition.map({ record.position > $0 }) ?? true else { break }
            scan.validEnd += length
            scan.lastPosition = record.position
        }
        return scan
    }

    /// A record that is short, too long or damaged.
    private struct DamagedRecord: Error {}

    /// The record at `offset`, and the bytes it takes.
    private static func readRecord(at offset: Int, _ descriptor: CInt, end: Int, path: String) throws -> (Record, Int) {
        guard end - offset >= 8 + recordHeaderBytes else { throw DamagedRecord() }
        let head = try read(8, at: offset, descriptor, path: path)
        let length = Int(integer(UInt32.self, head, at: 0))
        // Bounded before anything is allocated for it.
        guard length >= recordHeaderBytes, length <= maximumRecordBytes, length <= end - offset - 8 else { throw DamagedRecord() }
        let body = try read(length, at: offset + 8, descriptor, path: path)
        guard body.count == length, CRC32C.checksum(body) == integer(UInt32.self, head, at: 4) else { throw DamagedRecord() }
        let position = Int64(bitPattern: integer(UInt64.self, body, at: 0))
        return (Record(position: position, payload: Array(body[recordHeaderBytes...])), 8 + length)
    }

    private static func read(_ count: Int, at offset: Int, _ descriptor: CInt, path: String) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let got = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress! + done, count - done, off_t(offset + done)) }
            if got < 0, errno == EINTR { continue }
            guard got >= 0 else { throw PrivateFiles.failure("reading", path) }
            if got == 0 { break }
            done += got
        }
        return Array(bytes.prefix(done))
    }

    private static func write(_ bytes: [UInt8], at offset: Int, _ descriptor: CInt, path: String) throws {
        var done = 0
        while done < bytes.count {
            let wrote = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress! + done, bytes.count - done, off_t(offset + done)) }
            if wrote < 0, errno == EINTR { continue }
            guard wrote > 0 else { throw PrivateFiles.failure("writing", path) }
            done += wrote
        }
    }

    private static func append<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
    }

    private static func integer<T: FixedWidthInteger>(_ type: T.Type, _ bytes: [UInt8], at offset: Int) -> T {
        var value = T.zero
        for index in (0..<MemoryLayout<T>.size).reversed() { value = value << 8 | T(bytes[offset + index]) }
        return value
    }
}

/// close(2), by a name the log's own `close()` does not hide.
private func closeDescriptor(_ descriptor: CInt) {
    _ = close(descriptor)
}

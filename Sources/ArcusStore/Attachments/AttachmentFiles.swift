import Crypto
import Foundation
import Synchronization

/// Attachment blobs, named by their SHA-256: `attachments/ab/abcdef…` under the data
/// directory (or in memory for an in-memory store). A blob is written to a temporary file and
/// renamed into place, so a crash never leaves a partial blob under its final name, and the
/// blob is fsynced before the rename and its directory after it (`DurableFiles.place`), so a
/// blob whose write returned survives a power cut. Every directory here is 0700 and every file
/// 0600 (`PrivateFiles`).
///
/// No blob is ever held whole in memory to hash it: blobs are hashed as their bytes are
/// written or read, `hashPiece` bytes at a time (an in-memory store holds its blobs in memory
/// by design).
final class AttachmentFiles: Sendable {
    let directory: URL?
    private let memory = Mutex<[Data: Data]>([:])
    /// The running hash of each blob arriving in pieces, while its pieces came in order in this
    /// process; a blob resumed after a restart is hashed from its file when it completes.
    private let arriving = Mutex<[Data: ArrivingHash]>([:])

    private struct ArrivingHash {
        var length: Int64
        var hasher: SHA256
    }

    /// Bytes read at a time to hash or copy a blob.
    static let hashPiece = 1 << 16

    init(directory: URL?) { self.directory = directory }

    static func hex(_ hash: [UInt8]) -> String {
        hash.map { $0 < 16 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

    func url(for hash: [UInt8]) -> URL? {
        let name = Self.hex(hash)
        return directory?.appendingPathComponent(String(name.prefix(2))).appendingPathComponent(name)
    }

    /// Stores `bytes`; returns their hash.
    func store(_ bytes: Data) throws -> [UInt8] {
        let hash = Array(SHA256.hash(data: bytes))
        guard let url = url(for: hash) else {
            memory.withLock { $0[Data(hash)] = bytes }
            return hash
        }
        if FileManager.default.fileExists(atPath: url.path) { return hash }
        let created = try PrivateFiles.makeDirectory(url.deletingLastPathComponent())
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".incoming-\(UUID().uuidString)")
        do {
            try PrivateFiles.write(bytes, to: temporary)
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw error
        }
        try moveIntoPlace(temporary, url, created: created)
        return hash
    }

    /// Stores the file at `source`, streaming it through the hash; returns hash and length.
    func store(fileAt source: URL) throws -> (hash: [UInt8], length: Int64) {
        guard let input = InputStream(url: source) else {
            throw StoreError.attachment("cannot read \(source.path): check that the file exists and is readable")
        }
        input.open()
        defer { input.close() }
        var hasher = SHA256()
        var length: Int64 = 0
        var created = try directory.map { try PrivateFiles.makeDirectory($0) } ?? []
        let staging = (directory ?? FileManager.default.temporaryDirectory).appendingPathComponent(".incoming-\(UUID().uuidString)")
        let output: FileHandle
        do {
            output = try PrivateFiles.createFile(staging)
        } catch {
            throw StoreError.attachment("cannot write attachment staging file \(staging.path): \(error)")
        }
        var placed = false
        defer {
            try? output.close()
            if !placed { try? FileManager.default.removeItem(at: staging) }
        }
        var buffer = [UInt8](repeating: 0, count: Self.hashPiece)
        while true {
            let count = input.read(&buffer, maxLength: buffer.count)
            if count < 0 { throw StoreError.attachment("reading \(source.path) failed: \(input.streamError?.localizedDescription ?? "unknown error")") }
            if count == 0 { break }
            hasher.update(data: buffer[0..<count])
            try output.write(contentsOf: buffer[0..<count])
            length += Int64(count)
        }
        let hash = Array(hasher.finalize())
        guard let url = url(for: hash) else {
            memory.withLock { $0[Data(hash)] = (try? Data(contentsOf: staging)) ?? Data() }
            return (hash, length)
        }
        created += try PrivateFiles.makeDirectory(url.deletingLastPathComponent())
        try moveIntoPlace(staging, url, created: created)
        placed = true
        return (hash, length)
    }

    /// Puts a complete, verified blob under its name, durably (`DurableFiles.place`); `created`
    /// are the directories made for it. A blob already there (the same bytes) is kept.
    fileprivate func moveIntoPlace(_ temporary: URL, _ url: URL, created: [URL]) throws {
        if FileManager.default.fileExists(atPath: url.path) {
            try? FileManager.default.removeItem(at: temporary)
        } else {
            try DurableFiles.place(temporary, at: url, created: created)
        }
    }

    /// The blob's bytes, verified against its hash as they are read; nil when this store does
    /// not have it.
    func read(_ hash: [UInt8]) throws -> Data? {
        if let url = url(for: hash) {
            guard let handle = try? FileHandle(forReadingFrom: url) else { return nil }
            defer { try? handle.close() }
            var hasher = SHA256()
            var bytes = Data()
            while let piece = try handle.read(upToCount: Self.hashPiece), !piece.isEmpty {
                hasher.update(data: piece)
                bytes.append(piece)
            }
            guard Array(hasher.finalize()) == hash else { throw Self.damaged(hash) }
            return bytes
        }
        guard let data = memory.withLock({ $0[Data(hash)] }) else { return nil }
        guard Array(SHA256.hash(data: data)) == hash else { throw Self.damaged(hash) }
        return data
    }

    private static func damaged(_ hash: [UInt8]) -> StoreError {
        .attachment("attachment \(hex(hash)) is damaged on disk (its content no longer matches its hash)")
    }

    func has(_ hash: [UInt8]) -> Bool {
        if let url = url(for: hash) { return FileManager.default.fileExists(atPath: url.path) }
        return memory.withLock { $0[Data(hash)] != nil }
    }

    func remove(_ hash: [UInt8]) {
        if let url = url(for: hash) {
            try? FileManager.default.removeItem(at: url)
        } else {
            _ = memory.withLock { $0.removeValue(forKey: Data(hash)) }
        }
    }
}

// MARK: - Transfer from peers: ranges of a blob, and a blob arriving in pieces

extension AttachmentFiles {
    /// Up to `count` bytes of the blob from `offset`; nil when this store does not have it.
    func read(_ hash: [UInt8], offset: Int64, count: Int) throws -> [UInt8]? {
        if let url = url(for: hash) {
            guard let handle = try? FileHandle(forReadingFrom: url) else { return nil }
            defer { try? handle.close() }
            try handle.seek(toOffset: UInt64(offset))
            return Array(try handle.read(upToCount: count) ?? Data())
        }
        guard let data = memory.withLock({ $0[Data(hash)] }) else { return nil }
        let start = min(Int(offset), data.count)
        return Array(data[data.startIndex + start..<data.startIndex + min(start + count, data.count)])
    }

    /// The length of the blob if this store has it.
    func length(_ hash: [UInt8]) -> Int64? {
        if let url = url(for: hash) {
            return (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.int64Value
        }
        return memory.withLock { $0[Data(hash)].map { Int64($0.count) } }
    }

    /// Where blobs arriving in pieces are kept until they are complete (nil in memory).
    private var partialDirectory: URL? { directory?.appendingPathComponent("partial") }

    /// Where a blob arriving in pieces is kept until it is complete (nil in memory).
    private func partialURL(_ hash: [UInt8]) -> URL? {
        partialDirectory?.appendingPathComponent(Self.hex(hash))
    }

    /// How many bytes of the blob have arrived so far.
    func partialLength(_ hash: [UInt8]) -> Int64 {
        if let url = partialURL(hash) {
            return (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.int64Value ?? 0
        }
        return memory.withLock { Int64($0[Data(Self.partialKey(hash))]?.count ?? 0) }
    }

    private static func partialKey(_ hash: [UInt8]) -> [UInt8] { [0xFF] + hash }

    /// The blobs arriving in pieces: hash, bytes so far, and when a piece last arrived.
    func partials() -> [(hash: [UInt8], bytes: Int64, modified: Date)] {
        guard let partialDirectory else {
            return memory.withLock { memory in
                memory.compactMap { key, value in
                    key.count == 33 && key.first == 0xFF ? (Array(key.dropFirst()), Int64(value.count), Date.distantPast) : nil
                }
            }
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: partialDirectory.path)) ?? []
        return names.compactMap { name in
            guard name.count == 64, let hash = Self.hash(hex: name),
                  let attributes = try? FileManager.default.attributesOfItem(atPath: partialDirectory.appendingPathComponent(name).path)
            else { return nil }
            let bytes = (attributes[.size] as? NSNumber)?.int64Value ?? 0
            return (hash, bytes, attributes[.modificationDate] as? Date ?? .distantPast)
        }
    }

    private static func hash(hex: String) -> [UInt8]? {
        var bytes: [UInt8] = []
        var digits = hex.makeIterator()
        while let high = digits.next() {
            guard let low = digits.next(), let byte = UInt8(String([high, low]), radix: 16) else { return nil }
            bytes.append(byte)
        }
        return bytes.count == 32 ? bytes : nil
    }

    /// Appends `bytes`, which must start where the partial blob ends.
    func appendPartial(_ hash: [UInt8], at offset: Int64, _ bytes: [UInt8]) throws {
        let have = partialLength(hash)
        guard offset == have else {
            throw StoreError.attachment("a piece of attachment \(Self.hex(hash)) starts at byte \(offset), but \(have) bytes have arrived")
        }
        let key = Data(hash)
        guard let url = partialURL(hash) else {
            memory.withLock { $0[Data(Self.partialKey(hash)), default: Data()].append(contentsOf: bytes) }
            hashArrived(key, at: have, bytes)
            return
        }
        do {
            let handle: FileHandle
            if have == 0 {
                try PrivateFiles.makeDirectory(url.deletingLastPathComponent())
                try? FileManager.default.removeItem(at: url)
                handle = try PrivateFiles.createFile(url)
            } else {
                handle = try FileHandle(forWritingTo: url)
            }
            defer { try? handle.close() }
            try handle.seekToEnd()
            try handle.write(contentsOf: bytes)
        } catch {
            // Part of the piece may be in the file: the running hash no longer matches it.
            _ = arriving.withLock { $0.removeValue(forKey: key) }
            throw error
        }
        hashArrived(key, at: have, bytes)
    }

    /// Takes `bytes`, written at `offset`, into the blob's running hash; a blob whose earlier
    /// bytes this process did not see (it resumed) has none, and is hashed from its file.
    private func hashArrived(_ key: Data, at offset: Int64, _ bytes: [UInt8]) {
        arriving.withLock { arriving in
            if offset == 0 { arriving[key] = ArrivingHash(length: 0, hasher: SHA256()) }
            guard var running = arriving[key], running.length == offset else {
                arriving[key] = nil
                return
            }
            running.hasher.update(data: bytes)
            running.length += Int64(bytes.count)
            arriving[key] = running
        }
    }

    /// The SHA-256 of the partial blob's bytes: the running hash when it saw every byte, else
    /// read from the file a piece at a time.
    private func partialDigest(_ hash: [UInt8], at url: URL) throws -> [UInt8] {
        let length = partialLength(hash)
        if let running = arriving.withLock({ $0.removeValue(forKey: Data(hash)) }), running.length == length {
            return Array(running.hasher.finalize())
        }
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        var hasher = SHA256()
        while let piece = try handle.read(upToCount: Self.hashPiece), !piece.isEmpty {
            hasher.update(data: piece)
        }
        return Array(hasher.finalize())
    }

    /// Moves a complete partial blob into place if its content matches `hash`; a mismatch
    /// discards it (the pieces came from somewhere wrong) and throws.
    func completePartial(_ hash: [UInt8]) throws {
        if let url = partialURL(hash) {
            guard try partialDigest(hash, at: url) == hash else {
                discardPartial(hash)
                throw Self.mismatch(hash)
            }
            let destination = self.url(for: hash)!
            let created = try PrivateFiles.makeDirectory(destination.deletingLastPathComponent())
            try moveIntoPlace(url, destination, created: created)
            return
        }
        let running = arriving.withLock { $0.removeValue(forKey: Data(hash)) }
        let data = memory.withLock { $0.removeValue(forKey: Data(Self.partialKey(hash))) } ?? Data()
        let digest = running.flatMap { $0.length == Int64(data.count) ? Array($0.hasher.finalize()) : nil } ?? Array(SHA256.hash(data: data))
        guard digest == hash else { throw Self.mismatch(hash) }
        memory.withLock { $0[Data(hash)] = data }
    }

    private static func mismatch(_ hash: [UInt8]) -> StoreError {
        .attachment("attachment \(hex(hash)) arrived with content that does not match its hash; it was discarded")
    }

    /// Forgets a partial blob (its source was wrong).
    func discardPartial(_ hash: [UInt8]) {
        _ = arriving.withLock { $0.removeValue(forKey: Data(hash)) }
        if let url = partialURL(hash) {
            try? FileManager.default.removeItem(at: url)
        } else {
            _ = memory.withLock { $0.removeValue(forKey: Data(Self.partialKey(hash))) }
        }
    }
}

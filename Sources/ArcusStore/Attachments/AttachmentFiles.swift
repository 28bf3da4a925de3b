import Crypto
import Foundation
import Synchronization

/// Attachment blobs, named by their SHA-256: `attachments/ab/abcdef…` under the data
/// directory (or in memory for an in-memory store). A blob is written to a temporary file and
/// renamed into place, so a crash never leaves a partial blob under its final name.
final class AttachmentFiles: Sendable {
    let directory: URL?
    private let memory = Mutex<[Data: Data]>([:])

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
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".incoming-\(UUID().uuidString)")
        try bytes.write(to: temporary, options: .atomic)
        try moveIntoPlace(temporary, url)
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
        let staging = (directory ?? FileManager.default.temporaryDirectory).appendingPathComponent(".incoming-\(UUID().uuidString)")
        if directory != nil { try FileManager.default.createDirectory(at: directory!, withIntermediateDirectories: true) }
        guard FileManager.default.createFile(atPath: staging.path, contents: nil), let output = try? FileHandle(forWritingTo: staging) else {
            throw StoreError.attachment("cannot write attachment staging file \(staging.path)")
        }
        defer { try? output.close() }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = input.read(&buffer, maxLength: buffer.count)
            if count < 0 { throw StoreError.attachment("reading \(source.path) failed: \(input.streamError?.localizedDescription ?? "unknown error")") }
            if count == 0 { break }
            hasher.update(data: buffer[0..<count])
            try output.write(contentsOf: buffer[0..<count])
            length += Int64(count)
        }
        try output.synchronize()
        let hash = Array(hasher.finalize())
        guard let url = url(for: hash) else {
            memory.withLock { $0[Data(hash)] = (try? Data(contentsOf: staging)) ?? Data() }
            try? FileManager.default.removeItem(at: staging)
            return (hash, length)
        }
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try moveIntoPlace(staging, url)
        return (hash, length)
    }

    fileprivate func moveIntoPlace(_ temporary: URL, _ url: URL) throws {
        if FileManager.default.fileExists(atPath: url.path) {
            try? FileManager.default.removeItem(at: temporary)
        } else {
            try FileManager.default.moveItem(at: temporary, to: url)
        }
    }

    /// The blob's bytes, verified against its hash; nil when this store does not have it.
    func read(_ hash: [UInt8]) throws -> Data? {
        let data: Data
        if let url = url(for: hash) {
            guard FileManager.default.fileExists(atPath: url.path) else { return nil }
            data = try Data(contentsOf: url)
        } else {
            guard let stored = memory.withLock({ $0[Data(hash)] }) else { return nil }
            data = stored
        }
        guard Array(SHA256.hash(data: data)) == hash else {
            throw StoreError.attachment("attachment \(Self.hex(hash)) is damaged on disk (its content no longer matches its hash)")
        }
        return data
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

    /// Where a blob arriving in pieces is kept until it is complete (nil in memory).
    private func partialURL(_ hash: [UInt8]) -> URL? {
        directory?.appendingPathComponent("partial").appendingPathComponent(Self.hex(hash))
    }

    /// How many bytes of the blob have arrived so far.
    func partialLength(_ hash: [UInt8]) -> Int64 {
        if let url = partialURL(hash) {
            return (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.int64Value ?? 0
        }
        return memory.withLock { Int64($0[Data(Self.partialKey(hash))]?.count ?? 0) }
    }

    private static func partialKey(_ hash: [UInt8]) -> [UInt8] { [0xFF] + hash }

    /// Appends `bytes`, which must start where the partial blob ends.
    func appendPartial(_ hash: [UInt8], at offset: Int64, _ bytes: [UInt8]) throws {
        let have = partialLength(hash)
        guard offset == have else {
            throw StoreError.attachment("a piece of attachment \(Self.hex(hash)) starts at byte \(offset), but \(have) bytes have arrived")
        }
        guard let url = partialURL(hash) else {
            memory.withLock { $0[Data(Self.partialKey(hash)), default: Data()].append(contentsOf: bytes) }
            return
        }
        if have == 0 {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
                throw StoreError.attachment("cannot create \(url.path)")
            }
        }
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: bytes)
    }

    /// Moves a complete partial blob into place if its content matches `hash`; a mismatch
    /// discards it (the pieces came from somewhere wrong) and throws.
    func completePartial(_ hash: [UInt8]) throws {
        if let url = partialURL(hash) {
            let data = try Data(contentsOf: url)
            guard Array(SHA256.hash(data: data)) == hash else {
                try? FileManager.default.removeItem(at: url)
                throw StoreError.attachment("attachment \(Self.hex(hash)) arrived with content that does not match its hash; it was discarded")
            }
            let destination = self.url(for: hash)!
            try FileManager.default.createDirectory(at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
            try moveIntoPlace(url, destination)
            return
        }
        let data = memory.withLock { $0.removeValue(forKey: Data(Self.partialKey(hash))) } ?? Data()
        guard Array(SHA256.hash(data: data)) == hash else {
            throw StoreError.attachment("attachment \(Self.hex(hash)) arrived with content that does not match its hash; it was discarded")
        }
        memory.withLock { $0[Data(hash)] = data }
    }

    /// Forgets a partial blob (its source was wrong).
    func discardPartial(_ hash: [UInt8]) {
        if let url = partialURL(hash) {
            try? FileManager.default.removeItem(at: url)
        } else {
            _ = memory.withLock { $0.removeValue(forKey: Data(Self.partialKey(hash))) }
        }
    }
}

import ArcusCRDT
import Foundation
import GRDB

/// How far fetching an attachment has got.
public struct AttachmentProgress: Sendable, Hashable {
    public var bytesFetched: Int64
    public var totalBytes: Int64
    public var fraction: Double { totalBytes == 0 ? 1 : Double(bytesFetched) / Double(totalBytes) }

    public init(bytesFetched: Int64, totalBytes: Int64) {
        self.bytesFetched = bytesFetched
        self.totalBytes = totalBytes
    }
}

public enum AttachmentFetch: Sendable {
    /// The blob is here, verified against its hash.
    case available(Data)
    /// This store does not have the blob; a peer that has it can send it (with sync).
    case missing
}

extension Store {
    /// Stores `bytes` as an attachment and returns the token to put in a document.
    public func newAttachment(_ bytes: Data, metadata: [String: String] = [:]) throws -> AttachmentToken {
        try checkOpen()
        let hash = try attachmentFiles.store(bytes)
        try recordAttachment(hash, length: Int64(bytes.count))
        return AttachmentToken(hash: hash, length: Int64(bytes.count), metadata: metadata)
    }

    /// Stores the file at `path` as an attachment (streamed, not loaded whole).
    public func newAttachment(path: String, metadata: [String: String] = [:]) throws -> AttachmentToken {
        try checkOpen()
        let (hash, length) = try attachmentFiles.store(fileAt: URL(fileURLWithPath: path))
        try recordAttachment(hash, length: length)
        var metadata = metadata
        if metadata["name"] == nil { metadata["name"] = URL(fileURLWithPath: path).lastPathComponent }
        return AttachmentToken(hash: hash, length: length, metadata: metadata)
    }

    /// Names of the files uploads are received into, at the top of the data directory: the
    /// store makes them private with the rest when it opens (`DataDirectoryAccess`).
    public static let uploadPrefix = DataDirectoryAccess.uploadPrefix

    /// A new file (mode 0600) in the data directory to receive an upload into before
    /// `newAttachment(path:)` stores it; the caller removes it. Nil for an in-memory store.
    public func makeUploadFile() throws -> (url: URL, handle: FileHandle)? {
        guard let directory else { return nil }
        let url = directory.appendingPathComponent(Self.uploadPrefix + UUID().uuidString)
        return (url, try PrivateFiles.createFile(url))
    }

    /// Records a complete blob the store now has (made here, or fetched whole).
    func recordAttachment(_ hash: [UInt8], length: Int64) throws {
        try writeRecords { db in
            try db.execute(sql: "INSERT OR IGNORE INTO attachment (hash, length, created) VALUES (?, ?, ?)",
                           arguments: [Data(hash), length, Date().timeIntervalSince1970])
        }
    }

    /// The attachment's bytes if this store has them, reporting progress as they are read.
    public func fetchAttachment(_ token: AttachmentToken, progress: (@Sendable (AttachmentProgress) -> Void)? = nil) throws -> AttachmentFetch {
        try checkOpen()
        guard let data = try attachmentFiles.read(token.hash) else { return .missing }
        guard data.count == token.length else {
            throw StoreError.attachment("attachment \(token.hashHex) has \(data.count) bytes, but its token says \(token.length)")
        }
        progress?(AttachmentProgress(bytesFetched: token.length, totalBytes: token.length))
        return .available(data)
    }

    /// Deletes attachment blobs that no document references and that are older than `grace`
    /// (a blob just made is not yet in a document). Returns how many were deleted.
    @discardableResult
    public func collectAttachmentGarbage(grace: TimeInterval = 60) throws -> Int {
        let cutoff = Date().timeIntervalSince1970 - grace
        let orphans = try writeRecords { db -> [[UInt8]] in
            let hashes = try Data.fetchAll(db, sql: """
                SELECT hash FROM attachment WHERE created < ? AND hash NOT IN (SELECT hash FROM attachment_ref)
                """, arguments: [cutoff])
            for hash in hashes { try db.execute(sql: "DELETE FROM attachment WHERE hash = ?", arguments: [hash]) }
            return hashes.map(Array.init)
        }
        for hash in orphans { attachmentFiles.remove(hash) }
        return orphans.count
    }

    /// Whether this store has the attachment's blob.
    public func hasAttachment(_ token: AttachmentToken) -> Bool { attachmentFiles.has(token.hash) }
}

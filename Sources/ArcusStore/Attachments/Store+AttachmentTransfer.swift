import ArcusCRDT
import Foundation
import GRDB

/// What sync needs to move attachments between stores: ranges of a blob this store has, and a
/// blob arriving in pieces that survive a restart, verified by hash before anyone can read it.
extension Store {
    /// The blob's length when this store has it.
    public func attachmentLength(hash: [UInt8]) -> Int64? { attachmentFiles.length(hash) }

    /// The collections of the documents that reference the blob (for sync to serve it only to
    /// a peer that may read one of them).
    public func collectionsReferencing(attachmentHash hash: [UInt8]) throws -> Set<String> {
        try readWithoutRows { db in
            Set(try String.fetchAll(db, sql: "SELECT DISTINCT collection FROM attachment_ref WHERE hash = ?", arguments: [Data(hash)]))
        }
    }

    /// Up to `count` bytes of the blob from `offset`; nil when this store does not have it.
    public func readAttachment(hash: [UInt8], offset: Int64, count: Int) throws -> [UInt8]? {
        try checkOpen()
        return try attachmentFiles.read(hash, offset: offset, count: count)
    }

    /// How many bytes of a blob being fetched have arrived (kept across restarts).
    public func receivedAttachmentBytes(hash: [UInt8]) -> Int64 { attachmentFiles.partialLength(hash) }

    /// Appends a piece of a blob being fetched; `offset` must be where the arrived bytes end.
    public func receiveAttachmentPiece(hash: [UInt8], offset: Int64, bytes: [UInt8]) throws {
        try checkOpen()
        try attachmentFiles.appendPartial(hash, at: offset, bytes)
    }

    /// Checks a fully arrived blob against its hash and makes it available; a mismatch
    /// discards what arrived and throws.
    public func completeAttachment(_ token: AttachmentToken) throws {
        try checkOpen()
        let arrived = attachmentFiles.partialLength(token.hash)
        guard arrived == token.length else {
            attachmentFiles.discardPartial(token.hash)
            throw StoreError.attachment("attachment \(token.hashHex) arrived with \(arrived) bytes, but its token says \(token.length); it was discarded")
        }
        try attachmentFiles.completePartial(token.hash)
        try recordAttachment(token.hash, length: token.length)
    }

    /// Forgets the bytes of a blob that arrived so far.
    public func discardReceivedAttachment(hash: [UInt8]) { attachmentFiles.discardPartial(hash) }
}

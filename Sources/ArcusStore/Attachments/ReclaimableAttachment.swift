import Foundation
import GRDB

/// Blob bytes a store keeps for no document (see `Store.reclaimableAttachments`).
public struct ReclaimableAttachment: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// A blob arriving in pieces: `bytes` have arrived.
        case staged
        /// A complete blob no document here references.
        case unreferenced
    }

    public var hash: [UInt8]
    public var bytes: Int64
    public var kind: Kind
    /// When a piece last arrived (staged), or when the blob was stored (unreferenced).
    public var since: Date

    public init(hash: [UInt8], bytes: Int64, kind: Kind, since: Date) {
        self.hash = hash
        self.bytes = bytes
        self.kind = kind
        self.since = since
    }
}

extension Store {
    /// Blob bytes this store keeps for no document: blobs arriving in pieces, and complete blobs
    /// that no document here references (a blob fetched for a peer, one whose document was
    /// removed, one just uploaded and not yet in a document). Sync counts them against what
    /// peers may make this side keep, and reclaims the oldest when it needs room.
    public func reclaimableAttachments() throws -> [ReclaimableAttachment] {
        try checkOpen()
        let staged = attachmentFiles.partials().map {
            ReclaimableAttachment(hash: $0.hash, bytes: $0.bytes, kind: .staged, since: $0.modified)
        }
        let unreferenced = try readWithoutRows { db in
            try Row.fetchAll(db, sql: "SELECT hash, length, created FROM attachment WHERE hash NOT IN (SELECT hash FROM attachment_ref)")
                .map { row -> ReclaimableAttachment in
                    let hash: Data = row["hash"], length: Int64 = row["length"], created: Double = row["created"]
                    return ReclaimableAttachment(hash: Array(hash), bytes: length, kind: .unreferenced, since: Date(timeIntervalSince1970: created))
                }
        }
        return staged + unreferenced
    }

    /// Deletes a reclaimable blob: the pieces of one arriving, or a complete blob that still no
    /// document references and is older than `grace` (a blob just made is not yet in a
    /// document). Returns whether it deleted it.
    @discardableResult
    public func reclaim(_ attachment: ReclaimableAttachment, grace: TimeInterval = 60) throws -> Bool {
        try checkOpen()
        switch attachment.kind {
        case .staged:
            attachmentFiles.discardPartial(attachment.hash)
            return true
        case .unreferenced:
            let cutoff = Date().timeIntervalSince1970 - grace
            let deleted = try writeRecords { db -> Bool in
                try db.execute(sql: """
                    DELETE FROM attachment WHERE hash = ? AND created < ? AND hash NOT IN (SELECT hash FROM attachment_ref WHERE hash = ?)
                    """, arguments: [Data(attachment.hash), cutoff, Data(attachment.hash)])
                return db.changesCount > 0
            }
            if deleted { attachmentFiles.remove(attachment.hash) }
            return deleted
        }
    }
}

import Foundation
import ArcusCRDT
import GRDB

/// Which documents point at which attachment blobs, so blobs nothing points at can be collected.
enum AttachmentReferences {
    /// Records the attachments `state` holds (replacing what was recorded for `key`); skips the
    /// work for the common document that neither has nor had attachments.
    static func update(_ db: Database, _ row: DocumentRows.RowID, state: DocumentState, hadAttachments: Bool) throws {
        guard hadAttachments || !state.attachments.isEmpty else { return }
        let key = row.key
        let hashes = Set(state.cells.compactMap { cell -> [UInt8]? in
            guard cell.kind == .register, cell.flag == .attachment else { return nil }
            return state.attachments[Int(cell.index)].hash
        })
        guard hadAttachments || !hashes.isEmpty else { return }
        try clear(db, key)
        for hash in hashes {
            try db.execute(sql: "INSERT OR IGNORE INTO attachment_ref (collection, id, hash) VALUES (?, ?, ?)",
                           arguments: [key.collection, key.storageID, hash.data])
        }
    }

    static func clear(_ db: Database, _ key: DocumentKey) throws {
        try db.execute(sql: "DELETE FROM attachment_ref WHERE collection = ? AND id = ?", arguments: [key.collection, key.storageID])
    }
}

extension Array where Element == UInt8 {
    var data: Data { Data(self) }
}

import ArcusCRDT
import Foundation
import GRDB

extension Store {
    /// The blob's length as a document referencing it gives it (its token's "len"), for a caller
    /// that has only the hash; nil when no document here references it. One index lookup and
    /// one document read.
    public func referencedAttachmentLength(hash: [UInt8]) throws -> Int64? {
        let hashHex = AttachmentToken(hash: hash, length: 0).hashHex
        return try read { db -> Int64? in
            let rows = try Row.fetchAll(db, sql: "SELECT collection, id FROM attachment_ref WHERE hash = ? LIMIT 4", arguments: [Data(hash)])
            for row in rows {
                let collection: String = row["collection"], storageID: String = row["id"]
                guard let id = try? Value(json: storageID),
                      let document = try DocumentRows.visibleValue(db, DocumentRows.RowID(DocumentKey(collection: collection, id: id))),
                      let length = Self.tokenLength(in: document, hashHex: hashHex)
                else { continue }
                return length
            }
            return nil
        }
    }

    private static func tokenLength(in value: Value, hashHex: String) -> Int64? {
        switch value {
        case .object(let fields):
            if case .string(hashHex)? = fields["_attachment"], case .int(let length)? = fields["len"] { return length }
            for field in fields.values { if let length = tokenLength(in: field, hashHex: hashHex) { return length } }
            return nil
        case .array(let items):
            for item in items { if let length = tokenLength(in: item, hashHex: hashHex) { return length } }
            return nil
        default:
            return nil
        }
    }
}

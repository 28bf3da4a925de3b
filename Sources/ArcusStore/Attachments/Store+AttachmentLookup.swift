import ArcusCRDT
import Foundation
import GRDB

extension Store {
    /// The token of the blob with this hash, as a document here references it, for a caller that
    /// has only the hash; nil when no document here references it.
    public func referencedAttachment(hash: [UInt8]) throws -> AttachmentToken? {
        let keys = try readWithoutRows { db in
            try Row.fetchAll(db, sql: "SELECT collection, id FROM attachment_ref WHERE hash = ? LIMIT 4", arguments: [Data(hash)])
                .compactMap { row -> DocumentKey? in
                    let collection: String = row["collection"], storageID: String = row["id"]
                    return (try? Value(json: storageID)).map { DocumentKey(collection: collection, id: $0) }
                }
        }
        // A document's state lists the tokens it holds: no need to read its fields.
        for document in try loggedDocuments(keys) {
            if let token = document.state.attachments.first(where: { $0.hash == hash }) { return token }
        }
        return nil
    }
}

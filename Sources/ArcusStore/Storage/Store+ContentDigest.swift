import Crypto
import GRDB

extension Store {
    /// What a collection holds, as a count and one hash: equal for two stores whose live documents
    /// in `collection` are equal, whatever order they were written or merged in. The documents are
    /// read one at a time, in `_id` order, through a cursor, so that comparing two stores of a
    /// million documents (`arcus bench lan`) holds none of them in memory.
    public func contentDigest(of collection: String) throws -> (documents: Int, sha256: String) {
        try read { db in
            var hash = SHA256()
            var documents = 0
            let rows = try Row.fetchCursor(
                db, sql: "SELECT id, json FROM document WHERE collection = ? AND json IS NOT NULL ORDER BY id", arguments: [collection]
            )
            while let row = try rows.next() {
                // Each text with its length ahead of it, so that no two documents run into one another.
                for text in [row[0] as String, row[1] as String] {
                    let bytes = Array(text.utf8)
                    withUnsafeBytes(of: UInt64(bytes.count).littleEndian) { hash.update(bufferPointer: $0) }
                    hash.update(data: bytes)
                }
                documents += 1
            }
            return (documents, hash.finalize().map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined())
        }
    }
}

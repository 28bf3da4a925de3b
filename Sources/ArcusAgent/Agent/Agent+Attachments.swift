import ArcusCRDT
import ArcusStore

extension Agent {
    /// Stores the file at `path` as an attachment (streamed, not loaded whole) and sets its token
    /// at `field` (dotted for nested fields: `photo.full`) of the document `id` of `collection`,
    /// created when absent; `name`, if any, goes into the token's metadata. What the HTTP API's
    /// upload and the library's `attach` both do once the bytes are in a file.
    package func attach(file path: String, collection: String, id: String, field: String, name: String?) throws(AttachmentRefusal) -> AttachmentToken {
        let fieldPath = try AttachmentRefusal.check(field: field)
        var token: AttachmentToken
        do {
            token = try store.newAttachment(path: path)
        } catch {
            throw .failed("could not store the attachment: \(error)")
        }
        // A file's name means nothing to anyone else; a name is what the caller gives.
        token.metadata = name.flatMap { $0.isEmpty ? nil : ["name": $0] } ?? [:]
        do {
            try store.collection(collection).findByID(.string(id)).update { document in
                var target = document[fieldPath[0]]
                for name in fieldPath.dropFirst() { target = target[name] }
                target.set(token)
            }
        } catch let error as StoreError {
            throw .refused("error: \(error.description)")
        } catch {
            throw .failed("could not set the attachment's token: \(error)")
        }
        return token
    }
}

/// Why an attachment was not taken: the caller's mistake (`refused`), or the agent's (`failed`).
package enum AttachmentRefusal: Error, CustomStringConvertible {
    case refused(String)
    case failed(String)

    package var description: String {
        switch self {
        case .refused(let message), .failed(let message): message
        }
    }

    /// The field's path, checked before any byte is stored.
    package static func check(field: String) throws(AttachmentRefusal) -> [String] {
        let path = field.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard !path.contains(where: \.isEmpty) else {
            throw .refused("field \(field.debugDescription) has an empty part; name it as image or photo.full")
        }
        guard path.first != "_id" else { throw .refused("the _id of a document cannot hold an attachment; choose another field") }
        guard path.count <= Value.maximumNestingDepth else {
            throw .refused("field \(field.debugDescription) nests deeper than \(Value.maximumNestingDepth) levels, the most a document may")
        }
        return path
    }
}

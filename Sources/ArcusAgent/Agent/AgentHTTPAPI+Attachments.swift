import ArcusCRDT
import ArcusStore
import ArcusSync
import Foundation
import Hummingbird
import Logging
import NIOCore

/// Attachments through the HTTP API (Docs/Agent.md, "Attachments"): upload a blob into a
/// document's field, download one (fetching it from peers first when this store lacks it), and
/// the fetches under way.
extension AgentHTTPAPI {
    /// The largest attachment `POST /v1/attachments` takes; larger ones get 413.
    public static let maximumAttachmentBytes: Int64 = 256 << 20

    /// Bytes of a blob read from the store per piece of a download.
    static let downloadPieceBytes = 1 << 16

    static func addAttachmentRoutes(to router: Router<BasicRequestContext>, agent: Agent) {
        add(.upload, to: router) { request, _ in
            try await upload(request, agent: agent)
        }
        add(.fetches, to: router) { _, _ in
            JSONResponse.make(Value.object(["fetches": .array(agent.engine.attachmentFetches.map(\.json))]).jsonString)
        }
        add(.download, to: router) { _, context in
            try download(context.parameters.get("hash") ?? "", agent: agent)
        }
    }

    // MARK: - Upload

    /// `POST /v1/attachments?collection=C&id=ID&field=PATH[&name=N]`, the blob as the body: stores
    /// it (streamed through a file in the data directory, never held whole) and sets its token at
    /// `PATH` (dotted for nested fields) of the document, created when absent. 201 with the
    /// token's JSON and where it went.
    ///
    /// The body may have any media type but those a web page can send anywhere unasked
    /// (`text/plain`, forms) or none at all (415): a blob is never taken from a page's form.
    static func upload(_ request: Request, agent: Agent) async throws -> Response {
        let type = BodyMediaType(request.headers[.contentType])
        guard let type, !BodyMediaType.sendableByAnyPage.contains(type.essence) else {
            let sent = request.headers[.contentType].map { "Content-Type: \($0)" } ?? "no Content-Type"
            throw APIError(.unsupportedMediaType, """
                send the attachment's bytes with the header Content-Type: application/octet-stream (or their own type, \
                such as image/jpeg); this request has \(sent), which a web page can send to any address
                """)
        }
        let parameters = FormQuery(request.uri.query)
        let collection = try parameter(try parameters.get("collection"), "collection", example: "photos")
        let id = try parameter(try parameters.get("id"), "id", example: "photo-1")
        let field = try parameter(try parameters.get("field"), "field", example: "image")
        let name = try parameters.get("name")
        do throws(AttachmentRefusal) { _ = try AttachmentRefusal.check(field: field) } catch { throw APIError(.badRequest, error.description) }
        if let length = request.headers[.contentLength].flatMap(Int64.init), length > maximumAttachmentBytes {
            throw APIError(.contentTooLarge, "the attachment has \(length) bytes; at most \(maximumAttachmentBytes) are taken")
        }

        // A private file (0600) in the data directory, whatever the umask.
        let upload: (url: URL, handle: FileHandle)?
        do {
            upload = try agent.store.makeUploadFile()
        } catch {
            throw APIError(.internalServerError, "cannot receive the attachment: \(error)")
        }
        guard let (staging, output) = upload else {
            throw APIError(.internalServerError, "this agent's store has no data directory to receive the attachment into")
        }
        defer { try? FileManager.default.removeItem(at: staging) }
        var received: Int64 = 0
        do {
            defer { try? output.close() }
            for try await buffer in request.body {
                received += Int64(buffer.readableBytes)
                guard received <= maximumAttachmentBytes else {
                    throw APIError(.contentTooLarge, "the attachment exceeds \(maximumAttachmentBytes) bytes, the most that is taken")
                }
                try output.write(contentsOf: buffer.readableBytesView)
            }
        } catch let error as APIError {
            throw error
        } catch {
            throw APIError(.internalServerError, "could not receive the attachment into \(staging.path): \(error)")
        }

        let token: AttachmentToken
        do throws(AttachmentRefusal) {
            token = try agent.attach(file: staging.path, collection: collection, id: id, field: field, name: name)
        } catch .refused(let message) {
            throw APIError(.badRequest, message)
        } catch {
            throw APIError(.internalServerError, error.description)
        }
        var answer: [String: Value] = ["collection": .string(collection), "id": .string(id), "field": .string(field)]
        if case .object(let fields) = token.value { answer.merge(fields) { current, _ in current } }
        return JSONResponse.make(Value.object(answer).jsonString, status: .created)
    }

    /// Names of the files uploads are received into, in the data directory.
    static let uploadPrefix = Store.uploadPrefix

    /// Removes what uploads cut off by a crash left (at start, when the agent holds the data
    /// directory's lock, so no upload is under way); logs how many.
    static func removeLeftoverUploads(in dataDirectory: String, logger: Logger) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dataDirectory)) ?? []
        let leftovers = names.filter { $0.hasPrefix(uploadPrefix) }
        var removed = 0
        for name in leftovers where (try? FileManager.default.removeItem(atPath: (dataDirectory as NSString).appendingPathComponent(name))) != nil {
            removed += 1
        }
        if removed > 0 { logger.info("removed \(removed) partial upload(s) an earlier run left in \(dataDirectory)") }
    }

    private static func parameter(_ value: String?, _ name: String, example: String) throws -> String {
        guard let value, !value.isEmpty else {
            throw APIError(.badRequest, "give the document's \(name) as ?\(name)=…, such as \(name)=\(example)")
        }
        return value
    }

    // MARK: - Download

    /// `GET /v1/attachments/{hash}`: the blob when this store has it; otherwise 202 with the
    /// fetch's progress, the fetch going on in the background (one per blob, however often asked).
    static func download(_ hashHex: String, agent: Agent) throws -> Response {
        let hashHex = hashHex.lowercased()
        guard hashHex.count == 64, hashHex.allSatisfy(\.isHexDigit), let hash = AttachmentToken.hash(hex: hashHex) else {
            throw APIError(.badRequest, "\(hashHex.debugDescription) is not an attachment hash: give the 64 hex digits of \"_attachment\" in the document")
        }
        // The token's length, from a document that holds it: the fetch then checks the peer's.
        let token: AttachmentToken?
        do {
            token = try agent.store.referencedAttachment(hash: hash)
        } catch {
            throw APIError(.internalServerError, "could not look up which documents reference attachment \(hashHex): \(error)")
        }
        guard let token else {
            throw APIError(.notFound, "no document in this store references attachment \(hashHex); sync the document that holds it first (arcus subscribe)")
        }
        if let length = agent.store.attachmentLength(hash: hash) { return blob(hash, length: length, store: agent.store) }
        switch agent.attachmentDownloads.start(hashHex, hash: hash, length: token.length, engine: agent.engine) {
        case .failed(let message):
            throw APIError(.badGateway, "fetching attachment \(hashHex) failed: \(message); ask again to retry")
        case .running:
            break
        }
        // The fetch may have completed meanwhile.
        if let length = agent.store.attachmentLength(hash: hash) { return blob(hash, length: length, store: agent.store) }
        // Not yet listed (the fetch's task has not asked anyone yet): waiting.
        let fetch = agent.engine.attachmentFetches.first { $0.hashHex == hashHex } ?? AttachmentFetchStatus(
            hashHex: hashHex, bytesFetched: agent.store.receivedAttachmentBytes(hash: hash), totalBytes: token.length, source: nil, state: .waiting)
        return JSONResponse.make(fetch.json.jsonString, status: .accepted)
    }

    /// The blob's bytes, read from the store a piece at a time as the client takes them.
    private static func blob(_ hash: [UInt8], length: Int64, store: Store) -> Response {
        Response(
            status: .ok,
            headers: [.contentType: "application/octet-stream", .contentLength: String(length)],
            body: ResponseBody(contentLength: Int(length)) { writer in
                var offset: Int64 = 0
                while offset < length {
                    guard let piece = try store.readAttachment(hash: hash, offset: offset, count: downloadPieceBytes), !piece.isEmpty else {
                        throw APIError(.internalServerError, "attachment \(AttachmentToken(hash: hash, length: length).hashHex) vanished while it was being sent")
                    }
                    try await writer.write(ByteBuffer(bytes: piece))
                    offset += Int64(piece.count)
                }
                try await writer.finish(nil)
            }
        )
    }
}

extension AttachmentFetchStatus {
    /// A fetch under way, as `GET /v1/attachments` and `GET /v1/status` show it.
    var json: Value {
        .object([
            "hash": .string(hashHex), "state": .string(state.rawValue),
            "bytes_fetched": .int(bytesFetched), "total_bytes": totalBytes.map { .int($0) } ?? .null,
            "source": source.map { .string($0) } ?? .null,
        ])
    }
}

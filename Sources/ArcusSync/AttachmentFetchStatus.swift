import ArcusCRDT
import ArcusStore
import Foundation

/// One attachment fetch under way, as `SyncEngine.attachmentFetches` shows it.
public struct AttachmentFetchStatus: Sendable, Equatable {
    public enum State: String, Sendable, Equatable {
        /// No peer is serving it: none connected has it yet, or none is connected.
        case waiting
        /// A peer is sending it, for something on this device.
        case fetching
        /// A peer asked this side for it; this side fetches it from another peer to pass it on.
        case relaying
    }

    /// SHA-256 of the blob, 64 hex digits.
    public var hashHex: String
    /// Bytes that arrived so far (kept across reconnects and restarts).
    public var bytesFetched: Int64
    /// The blob's length, from its token (nil only in statuses made by hand).
    public var totalBytes: Int64?
    /// The peer sending it (its description, as in the logs); nil while waiting.
    public var source: String?
    public var state: State

    public init(hashHex: String, bytesFetched: Int64, totalBytes: Int64?, source: String?, state: State) {
        self.hashHex = hashHex
        self.bytesFetched = bytesFetched
        self.totalBytes = totalBytes
        self.source = source
        self.state = state
    }
}

extension SyncEngine {
    /// The attachment fetches under way (local ones and relays), sorted by hash. A fetch leaves
    /// the list once its blob is in the store, verified, or once it fails.
    public var attachmentFetches: [AttachmentFetchStatus] { attachments.snapshot() }

    /// Waits until the blob with this SHA-256 is in the store, fetching it from peers, for a
    /// caller that has the hash but not the token. The length is fixed by a token, never by the
    /// serving peer: `length` when given (from the caller's token), else that of a document here
    /// that references the blob; with neither, this throws. Returns the blob's length. Cancel the
    /// task to give up; the bytes that arrived stay for the next attempt.
    @discardableResult
    public func fetchAttachment(hash: [UInt8], length: Int64? = nil,
                                progress: (@Sendable (AttachmentProgress) -> Void)? = nil) async throws -> Int64 {
        guard hash.count == 32 else { throw StoreError.attachment("an attachment hash is 32 bytes, not \(hash.count)") }
        let hex = AttachmentToken(hash: hash, length: 0).hashHex
        guard let expected = try length ?? store.referencedAttachment(hash: hash)?.length else {
            throw StoreError.attachment("no document in this store references attachment \(hex), so its length is unknown: "
                + "sync the document that holds it first, or fetch it by its token")
        }
        try await attachments.fetch(hash, length: expected, progress: progress)
        guard let length = store.attachmentLength(hash: hash) else {
            throw StoreError.attachment("attachment \(hex) vanished from the store right after it arrived")
        }
        return length
    }
}
